import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { powerPod } from "../../services/pods/power";
import { Pod, PodParams } from "./schemas";

/**
 * startPod, stopPod and restartPod: three operations of one shape (a path, an operationId and a
 * summary named by the action, one service verb), so one file makes all three rather than three
 * files that differ in a word.
 */
type PowerAction = "start" | "stop" | "restart";

const powerRoute = (action: PowerAction) =>
  createRoute({
    tags: ["Pods"],
    security: authenticated,
    middleware: [jsonBodyLimit, requireAuth],
    operationId: `${action}Pod`,
    method: "post",
    path: `/{name}/${action}`,
    summary: `${action[0]?.toUpperCase()}${action.slice(1)} a pod; waits up to 30 s for its host to confirm`,
    request: { params: PodParams },
    responses: { 200: jsonResponse(Pod, "The updated pod"), ...errors(401, 402, 404, 409, 429, 503) },
  });

export function registerPowerPod(app: Router, action: PowerAction) {
  app.openapi(powerRoute(action), async (c) => {
    const input = { ...c.req.valid("param"), action };
    return c.json(
      unwrap(await powerPod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
