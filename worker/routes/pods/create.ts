import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { rateLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { createPod } from "../../services/pods/create";
import { CreatePodRequest, Pod } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, rateLimit("createPod"), requireAuth],
  operationId: "createPod",
  method: "post",
  path: "/",
  summary: "Create a pod (202, status `creating`; `running` once its host has started it)",
  request: { body: jsonBody(CreatePodRequest) },
  responses: { 202: jsonResponse(Pod, "Accepted"), ...errors(400, 401, 402, 409, 429, 503) },
});

export function registerCreatePod(app: Router) {
  app.openapi(route, async (c) => {
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
  });
}
