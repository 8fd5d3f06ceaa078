import { createRoute, z } from "@hono/zod-openapi";
import { POD_PATH_ROOTS } from "../../../shared/pod-paths";
import {
  EXEC_MAX_ARG_BYTES,
  EXEC_MAX_OUTPUT_BYTES,
  EXEC_MAX_TIMEOUT_S,
} from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { keepsCachedReads, requireAuth } from "../../http/middleware";
import { enforceFairShare } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { execInPod } from "../../services/inside/exec";
import { PodParams } from "../pods/schemas";
import { noNul } from "./schemas";

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

export const ExecRequest = z.object({
  command: z
    .array(
      z
        .string()
        .refine((s) => utf8Bytes(s) <= EXEC_MAX_ARG_BYTES, {
          message: `must be at most ${EXEC_MAX_ARG_BYTES} bytes`,
        })
        .refine(noNul, { message: "must not contain NUL" }),
    )
    .min(1)
    .max(1000)
    .openapi({
      description: "argv, run without a shell: `$(…)`, `;`, `*` are passed literally",
      example: ["node", "--version"],
    }),
  workdir: z
    .string()
    .max(4096)
    .optional()
    .openapi({
      description: `absolute, no \`..\`, inside ${POD_PATH_ROOTS.join(", ")}; default /home/pod_user/app`,
    }),
  timeout_s: z.number().int().min(1).max(EXEC_MAX_TIMEOUT_S).default(60),
});

const ExecResult = z
  .object({
    exit_code: z.number().int().nullable().openapi({
      description:
        "the process's exit status; 124 when the timeout ended it (137 when it ignored TERM and was killed 5 s later); null only if the host could not report one",
    }),
    stdout: z.string().openapi({
      description: `at most ${EXEC_MAX_OUTPUT_BYTES} bytes; more ends with "\\n[output truncated: N bytes omitted]"`,
    }),
    stderr: z.string().openapi({ description: "capped like stdout" }),
    duration_ms: z.number().int(),
    timed_out: z.boolean(),
  })
  .openapi("ExecResult");

const route = createRoute({
  security: authenticated,
  // a command in the pod changes no credential or membership: the isolate's cached reads stay. The
  // exec fair share is counted by the handler, beside the pod's lookup (one wait instead of two).
  middleware: [jsonBodyLimit, requireAuth, keepsCachedReads],
  tags: ["Command runner"],
  operationId: "execPodCommand",
  method: "post",
  path: "/{name}/exec",
  summary: "Run a command in the pod as pod_user (no shell); 200 whatever the exit status",
  request: { params: PodParams, body: jsonBody(ExecRequest) },
  responses: {
    200: jsonResponse(ExecResult, "The command ran (see exit_code and timed_out)"),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerExecPodCommand(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    const teamId = c.get("caller").teamId;
    // 429 before anything runs, as fairShareLimit("exec") would; the pod's lookup meanwhile
    const admitted = enforceFairShare(c.env, "exec", teamId, input.name);
    return c.json(unwrap(await execInPod({ ctx: serviceContext(c), teamId, input, admitted })), 200);
  });
}
