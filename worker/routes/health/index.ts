import { createRoute, z } from "@hono/zod-openapi";
import { FIX_ACTIONS } from "../../../shared/protocol/health";
import { RELOAD_MAX_OUTPUT_BYTES } from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, createRouter, errors, jsonResponse, serviceContext } from "../../http/router";
import { fixDiagnosis } from "../../services/health/fix";
import { PodParams } from "../pods/schemas";

/**
 * App health, mounted at /api/pods beside the pods router. The diagnosis itself is the Pod's
 * `app_health_diagnosis` (a JSON string the host's periodic check keeps up to date); here its
 * one-click fix is applied.
 */

const DiagnosisFixed = z
  .object({
    status: z.literal("fixed"),
    action: z.enum(FIX_ACTIONS).openapi({
      description:
        "install_dependencies: npm install / pip install -r and an app restart; add_start_script: a `start` script in package.json pointing at the app's entry file; forward_port: a forwarder (worker podhost-port-forward) from the preset's port to the port the app listens on",
    }),
  })
  .openapi("DiagnosisFixed");

const FixFailure = z
  .object({
    error: z.string(),
    deps_output: z.string().openapi({
      description: `the last ${RELOAD_MAX_OUTPUT_BYTES} bytes at most of the failing install's output`,
    }),
  })
  .openapi("DiagnosisFixFailure");

export const healthRouter = createRouter().openapi(
  createRoute({
    security: authenticated,
    middleware: [jsonBodyLimit, requireAuth],
    tags: ["Pods"],
    operationId: "fixPodDiagnosis",
    method: "post",
    path: "/{name}/diagnosis/fix",
    summary:
      "Apply the one-click fix of the pod's app health diagnosis (its `fix_action`); 400 when the diagnosis has none",
    request: { params: PodParams },
    responses: {
      200: jsonResponse(DiagnosisFixed, "Fixed; the next health check re-evaluates the app"),
      ...errors(400, 401, 404, 409, 429, 503),
      500: jsonResponse(FixFailure, "The dependency install failed"),
    },
  }),
  async (c) =>
    c.json(
      unwrap(await fixDiagnosis(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
      200,
    ),
);
