import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { boundTeamOnly, requireAuth } from "../../http/middleware";
import { authenticated, createRouter, errors, jsonResponse, serviceContext } from "../../http/router";
import { AUDIT_ACTIONS } from "../../services/audit/actions";
import { AUDIT_PAGE_MAX, listAudit } from "../../services/audit/list";
import { TeamIdParam } from "../teams/schemas";

/**
 * The audit log, an extension of the spec (docs/audit.md): every change made to the team through
 * the API, the dashboard, the CLI or MCP, newest first. Owner only: members 403, anyone else 404.
 */

const AuditEvent = z
  .object({
    id: z.string(),
    at: z.string().openapi({ description: "when the change was made (ISO 8601, UTC)" }),
    actor: z.object({ id: z.string(), email: z.string() }),
    credential: z.object({
      kind: z.enum(["session", "api_token", "connector"]),
      label: z
        .string()
        .nullable()
        .openapi({ description: "an API token's prefix, a connector's client name; null for a session" }),
    }),
    ip: z.string().nullable(),
    action: z.enum(AUDIT_ACTIONS),
    pod: z.string().nullable(),
    target: z
      .string()
      .nullable()
      .openapi({ description: "what else the change named: an id, a name, a path" }),
    outcome: z.enum(["ok", "error"]),
    status: z.number().int().openapi({ description: "the HTTP status the change was answered with" }),
    detail: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ description: "bounded facts: exec's `argv`, env's `keys` (names only), a move's `to`" }),
  })
  .openapi("AuditEvent");

const AuditPage = z
  .object({
    events: z.array(AuditEvent),
    next_cursor: z.string().nullable().openapi({ description: "for the next, older page; null on the last" }),
  })
  .openapi("AuditPage");

const Time = z.string().max(40).openapi({ example: "2026-11-01T00:00:00Z" });

const AuditQuery = z.object({
  actor: z.string().max(320).optional().openapi({ description: "a user id, or an e-mail address" }),
  pod: z.string().max(63).optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  since: Time.optional().openapi({ description: "from this time on (inclusive)" }),
  until: Time.optional().openapi({ description: "up to this time (inclusive)" }),
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(AUDIT_PAGE_MAX).default(50),
});

export const auditRouter = createRouter().openapi(
  createRoute({
    tags: ["Audit log"],
    security: authenticated,
    middleware: [jsonBodyLimit, requireAuth, boundTeamOnly],
    operationId: "listTeamAudit",
    method: "get",
    path: "/{id}/audit",
    summary:
      "The team's audit log, newest first (owner only): who changed what, with which credential, from which IP, and how it ended; filtered by actor, pod, action and time, a page at a time",
    request: { params: TeamIdParam, query: AuditQuery },
    responses: { 200: jsonResponse(AuditPage, "A page of the log"), ...errors(400, 401, 403, 404) },
  }),
  async (c) => {
    const input = { ...c.req.valid("query"), userId: c.get("caller").user.id };
    return c.json(
      unwrap(await listAudit({ ctx: serviceContext(c), teamId: c.req.valid("param").id, input })),
      200,
    );
  },
);
