import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { boundTeamOnly, requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import {
  createChannel,
  DELIVERY_PAGE_MAX,
  deleteChannel,
  listChannels,
  listDeliveries,
  testChannel,
  updateChannel,
} from "../../services/alerts/channels";
import { AlertEventName } from "../../services/alerts/events";
import { listAlertEvents, setAlertEvent } from "../../services/alerts/rules";
import { TeamIdParam } from "../teams/schemas";

/**
 * Alerts, an extension of the spec (docs/alerts.md): a team's channels (e-mail to members by role, a
 * signed webhook, a Slack/Discord-compatible chat webhook), a test send, and the delivery history
 * with each receiver's status code. Owner only: members 403, anyone else 404.
 */

const tags = ["Alerts"];
const onTeam = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth, boundTeamOnly] };

const Role = z.enum(["owner", "member"]);
const ChannelName = z.string().trim().min(1).max(100);
const ChannelUrl = z.string().max(2048).openapi({ example: "https://hooks.example.com/podhost" });

const Channel = z
  .object({
    id: z.string(),
    kind: z.enum(["email", "webhook", "chat"]),
    name: z.string(),
    url: z.string().nullable(),
    roles: z.array(Role).nullable(),
    enabled: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("AlertChannel");

const CreatedChannel = Channel.extend({
  secret: z
    .string()
    .optional()
    .openapi({ description: "webhook only, shown this once: the HMAC-SHA256 key of `Podhost-Signature`" }),
}).openapi("AlertChannelCreated");

const CreateChannel = z
  .object({
    kind: z.enum(["email", "webhook", "chat"]),
    name: ChannelName,
    url: ChannelUrl.optional().openapi({ description: "webhook and chat: where alerts are POSTed" }),
    roles: z
      .array(Role)
      .max(2)
      .optional()
      .openapi({ description: "email: whose members get the mail (default `[owner]`)" }),
  })
  .openapi({ example: { kind: "webhook", name: "ops", url: "https://hooks.example.com/podhost" } });

const UpdateChannel = z.object({
  name: ChannelName.optional(),
  url: ChannelUrl.optional(),
  roles: z.array(Role).max(2).optional(),
  enabled: z.boolean().optional(),
});

const Delivery = z
  .object({
    id: z.string(),
    channel_id: z.string(),
    incident_id: z.string().nullable(),
    event: z.string(),
    state: z.enum(["firing", "resolved", "test"]),
    status: z.enum(["pending", "delivered", "failed"]),
    status_code: z.number().int().nullable(),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    delivered_at: z.string().nullable(),
  })
  .openapi("AlertDelivery");

const ChannelParams = TeamIdParam.extend({
  channelId: z
    .string()
    .max(64)
    .openapi({ param: { name: "channelId", in: "path" } }),
});

const DeliveriesQuery = z.object({
  channel_id: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(DELIVERY_PAGE_MAX).default(50),
});

const AlertEvents = z
  .object({
    events: z.array(z.object({ event: AlertEventName, enabled: z.boolean() })),
    pods: z.array(z.object({ pod: z.string(), event: AlertEventName, enabled: z.boolean() })),
  })
  .openapi("AlertEvents");

const SetAlertEvent = z
  .object({
    event: AlertEventName,
    enabled: z.boolean(),
    pod: z
      .string()
      .max(63)
      .optional()
      .openapi({ description: "a pod of the team: the rule is this pod's only" }),
  })
  .openapi({ example: { event: "deploy_failed", enabled: false } });

const userOf = (c: { get(key: "caller"): { user: { id: string } } }) => c.get("caller").user.id;

export const alertsRouter = createRouter()
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listAlertChannels",
      method: "get",
      path: "/{id}/alerts/channels",
      summary: "The team's alert channels (owner only)",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(z.array(Channel), "Channels"), ...errors(401, 403, 404) },
    }),
    async (c) =>
      c.json(unwrap(await listChannels(serviceContext(c), userOf(c), c.req.valid("param").id)), 200),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "createAlertChannel",
      method: "post",
      path: "/{id}/alerts/channels",
      summary:
        "Add a channel (owner only): `email` to the members with `roles`, a signed `webhook` (the answer carries its secret, once), or a `chat` incoming webhook (Slack, Discord). Webhook URLs to loopback, private or metadata addresses are refused (400).",
      request: { params: TeamIdParam, body: jsonBody(CreateChannel) },
      responses: {
        201: jsonResponse(CreatedChannel, "The channel"),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) =>
      c.json(
        unwrap(
          await createChannel(serviceContext(c), userOf(c), c.req.valid("param").id, c.req.valid("json")),
        ),
        201,
      ),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "updateAlertChannel",
      method: "patch",
      path: "/{id}/alerts/channels/{channelId}",
      summary: "Rename, re-aim, change the roles of, or turn a channel on or off (owner only)",
      request: { params: ChannelParams, body: jsonBody(UpdateChannel) },
      responses: { 200: jsonResponse(Channel, "The channel"), ...errors(400, 401, 403, 404) },
    }),
    async (c) => {
      const { id, channelId } = c.req.valid("param");
      return c.json(
        unwrap(await updateChannel(serviceContext(c), userOf(c), id, channelId, c.req.valid("json"))),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "deleteAlertChannel",
      method: "delete",
      path: "/{id}/alerts/channels/{channelId}",
      summary: "Remove a channel (owner only); its pending deliveries are dropped",
      request: { params: ChannelParams },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const { id, channelId } = c.req.valid("param");
      return c.json(unwrap(await deleteChannel(serviceContext(c), userOf(c), id, channelId)), 200);
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "testAlertChannel",
      method: "post",
      path: "/{id}/alerts/channels/{channelId}/test",
      summary:
        "Send a test alert to the channel (owner only): answered 202 with the delivery, whose outcome the history shows",
      request: { params: ChannelParams },
      responses: { 202: jsonResponse(Delivery, "The delivery, pending"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const { id, channelId } = c.req.valid("param");
      return c.json(unwrap(await testChannel(serviceContext(c), userOf(c), id, channelId)), 202);
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listAlertDeliveries",
      method: "get",
      path: "/{id}/alerts/deliveries",
      summary: "Alert deliveries, newest first, with each receiver's status code (owner only)",
      request: { params: TeamIdParam, query: DeliveriesQuery },
      responses: { 200: jsonResponse(z.array(Delivery), "Deliveries"), ...errors(400, 401, 403, 404) },
    }),
    async (c) => {
      const { channel_id, limit } = c.req.valid("query");
      return c.json(
        unwrap(
          await listDeliveries(serviceContext(c), userOf(c), c.req.valid("param").id, {
            channelId: channel_id,
            limit,
          }),
        ),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listAlertEvents",
      method: "get",
      path: "/{id}/alerts/events",
      summary:
        "Which events alert, for the team and the pods that differ (owner only; every event is on by default)",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(AlertEvents, "Event switches"), ...errors(401, 403, 404) },
    }),
    async (c) =>
      c.json(unwrap(await listAlertEvents(serviceContext(c), userOf(c), c.req.valid("param").id)), 200),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "setAlertEvent",
      method: "put",
      path: "/{id}/alerts/events",
      summary: "Switch an event on or off for the team, or with `pod` for one pod (owner only)",
      request: { params: TeamIdParam, body: jsonBody(SetAlertEvent) },
      responses: { 200: jsonResponse(AlertEvents, "Event switches"), ...errors(400, 401, 403, 404) },
    }),
    async (c) =>
      c.json(
        unwrap(
          await setAlertEvent(serviceContext(c), userOf(c), c.req.valid("param").id, c.req.valid("json")),
        ),
        200,
      ),
  );
