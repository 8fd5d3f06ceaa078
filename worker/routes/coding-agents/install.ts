import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { installCodingAgent } from "../../services/coding-agents/install";
import { PodParams } from "../pods/schemas";
import { AgentSlug, AgentVersionField, tags } from "./schemas";

export const InstallRequest = z.object({ agent: AgentSlug, version: AgentVersionField.optional() });

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("agents")],
  operationId: "installPodAgent",
  method: "post",
  path: "/pods/{name}/agents",
  summary:
    "Install a coding agent into the pod (202, `installing`; poll the list until `installed` or `error`). Pod running",
  request: { params: PodParams, body: jsonBody(InstallRequest) },
  responses: {
    202: jsonResponse(
      z.object({ slug: z.string().openapi({ example: "codex" }), status: z.literal("installing") }),
      "Installing",
    ),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerInstallPodAgent(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await installCodingAgent({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
