import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { rateLimit } from "../../http/rate-limit";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { clonePod } from "../../services/pods/clone";
import { createPod } from "../../services/pods/create";
import { listEvents } from "../../services/pods/events";
import { listPods } from "../../services/pods/list";
import { findTeamPod } from "../../services/pods/lookup";
import { getPodLive, powerPod } from "../../services/pods/power";
import { deletePod } from "../../services/pods/remove";
import { resizePod } from "../../services/pods/resize";
import { CreatePodRequest, Event, Paging, Pod, PodList, PodNameSchema, PodParams } from "./schemas";

const tags = ["Pods"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const powerRoute = (action: "start" | "stop" | "restart") =>
  createRoute({
    ...common,
    operationId: `${action}Pod`,
    method: "post",
    path: `/{name}/${action}`,
    summary: `${action[0]?.toUpperCase()}${action.slice(1)} a pod; waits up to 30 s for its host to confirm`,
    request: { params: PodParams },
    responses: { 200: jsonResponse(Pod, "The updated pod"), ...errors(401, 404, 409, 503) },
  });

export const podsRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "createPod",
      method: "post",
      path: "/",
      summary: "Create a pod (202, status `creating`; `running` once its host has started it)",
      middleware: [jsonBodyLimit, rateLimit("createPod"), requireAuth],
      request: { body: jsonBody(CreatePodRequest) },
      responses: { 202: jsonResponse(Pod, "Accepted"), ...errors(400, 401, 402, 409, 429, 503) },
    }),
    async (c) => {
      const country = (c.req.raw as { cf?: { country?: string } }).cf?.country;
      const view = unwrap(
        await createPod({
          ctx: serviceContext(c),
          caller: c.get("caller"),
          input: c.req.valid("json"),
          country,
        }),
      );
      return c.json(view, 202);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listPods",
      method: "get",
      path: "/",
      summary: "The active team's pods, newest first",
      request: { query: Paging },
      responses: { 200: jsonResponse(PodList, "Pods"), ...errors(400, 401) },
    }),
    async (c) =>
      c.json(
        await listPods(c.get("db"), c.get("caller").teamId, c.env.POD_DOMAIN, c.req.valid("query")),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "getPod",
      method: "get",
      path: "/{name}",
      summary: "One pod, with its status as its host sees it now",
      request: { params: PodParams },
      responses: { 200: jsonResponse(Pod, "The pod"), ...errors(401, 404, 503) },
    }),
    async (c) =>
      c.json(
        unwrap(await getPodLive(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "deletePod",
      method: "delete",
      path: "/{name}",
      summary: "Delete a pod: containers and volumes removed, the name reserved for 7 days",
      request: { params: PodParams },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 404, 503) },
    }),
    async (c) => {
      unwrap(await deletePod(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name));
      return c.json({ status: "deleted" as const }, 200);
    },
  )
  .openapi(powerRoute("start"), async (c) =>
    c.json(
      unwrap(await powerPod(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name, "start")),
      200,
    ),
  )
  .openapi(powerRoute("stop"), async (c) =>
    c.json(
      unwrap(await powerPod(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name, "stop")),
      200,
    ),
  )
  .openapi(powerRoute("restart"), async (c) =>
    c.json(
      unwrap(await powerPod(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name, "restart")),
      200,
    ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "resizePod",
      method: "post",
      path: "/{name}/resize",
      summary: "Move a pod to another plan; its limits change on the running container",
      request: {
        params: PodParams,
        body: jsonBody(z.object({ plan_slug: z.string().max(40).openapi({ example: "build" }) })),
      },
      responses: { 200: jsonResponse(Pod, "The resized pod"), ...errors(400, 401, 404, 409, 503) },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { plan_slug } = c.req.valid("json");
      return c.json(unwrap(await resizePod(serviceContext(c), c.get("caller").teamId, name, plan_slug)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "clonePod",
      method: "post",
      path: "/{name}/clone",
      summary: "Copy a pod (files and environment) into a new pod on the same server",
      request: { params: PodParams, body: jsonBody(z.object({ new_name: PodNameSchema })) },
      responses: { 201: jsonResponse(Pod, "The new pod"), ...errors(400, 401, 404, 409, 503) },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { new_name } = c.req.valid("json");
      const input = { source: name, new_name };
      return c.json(
        unwrap(await clonePod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
        201,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listPodEvents",
      method: "get",
      path: "/{name}/events",
      summary: "The pod's activity log, newest first",
      request: {
        params: PodParams,
        query: z.object({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          offset: z.coerce.number().int().min(0).default(0),
          type: z.string().max(40).optional(),
        }),
      },
      responses: {
        200: jsonResponse(
          z.object({
            events: z.array(Event),
            total: z.number().int(),
            limit: z.number().int(),
            offset: z.number().int(),
          }),
          "Events",
        ),
        ...errors(400, 401, 404),
      },
    }),
    async (c) => {
      const found = unwrap(await findTeamPod(c.get("db"), c.get("caller").teamId, c.req.valid("param").name));
      return c.json(await listEvents(c.get("db"), found.pod.id, c.req.valid("query")), 200);
    },
  );
