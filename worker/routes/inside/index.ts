import { createRoute, z } from "@hono/zod-openapi";
import { NODE_VERSIONS } from "../../../shared/catalog";
import { POD_PATH_ROOTS } from "../../../shared/pod-paths";
import {
  ENV_FILE,
  ENV_NAME,
  EXEC_MAX_ARG_BYTES,
  EXEC_MAX_OUTPUT_BYTES,
  EXEC_MAX_TIMEOUT_S,
  LOG_SOURCES,
  RELOAD_MAX_OUTPUT_BYTES,
} from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  serviceContext,
} from "../../http/router";
import { getPodEnv, setPodEnv, unsetPodEnv } from "../../services/inside/env";
import { execInPod } from "../../services/inside/exec";
import { readPodLogs } from "../../services/inside/logs";
import { reloadPodApp } from "../../services/inside/reload";
import { podDiskUsage, podPreset, setNodeVersion } from "../../services/inside/runtime";
import { PodParams } from "../pods/schemas";

/**
 * Working inside a pod, mounted at /api/pods beside the pods router: the command runner, the app's
 * environment variables, logs, preset details, disk usage and the Node.js version switch.
 */

const common = { security: authenticated, middleware: [jsonBodyLimit, requireAuth] };
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const noNul = (s: string) => !s.includes("\0");

const ExecRequest = z.object({
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

const EnvName = z
  .string()
  .max(128)
  .regex(ENV_NAME, { message: "must match ^[A-Za-z_][A-Za-z0-9_]*$" })
  .openapi({ example: "API_URL" });
const EnvValue = z.string().max(32_768).refine(noNul, { message: "must not contain NUL" });
const EnvVars = z.record(z.string(), z.string()).openapi({ example: { API_URL: "https://api.example.com" } });
const EnvFile = z
  .object({ path: z.string().openapi({ example: ENV_FILE }), vars: EnvVars })
  .openapi("EnvFile");

const SetEnvRequest = z.object({
  vars: z
    .record(EnvName, EnvValue)
    .refine((v) => Object.keys(v).length > 0, { message: "must not be empty" })
    .refine((v) => Object.keys(v).length <= 100, { message: "must have at most 100 variables" })
    .openapi({ description: "merged into the file; any value (newlines, quotes, #) is written quoted" }),
});
const UnsetEnvRequest = z.object({ keys: z.array(EnvName).min(1).max(100) });

const LogsQuery = z.object({
  source: z.enum(LOG_SOURCES).default("app"),
  lines: z.coerce.number().int().min(1).max(1000).default(100),
  grep: z.string().max(1000).optional().openapi({
    description:
      "PCRE2 (grep -P) pattern; all-lowercase matches case-insensitively, any uppercase letter case-sensitively. Filtered reads return the last matching lines, newest first",
  }),
});
const LogsView = z
  .object({
    source: z.enum(LOG_SOURCES),
    lines: z.array(z.string()).openapi({ description: "unfiltered: oldest first; filtered: newest first" }),
    message: z.literal("no entries").optional(),
  })
  .openapi("PodLogs");

const PresetView = z
  .object({
    preset: z.string(),
    port: z.number().int(),
    app_root: z.string(),
    public_root: z.string(),
    runtime: z.object({ name: z.string(), version: z.string() }),
    start_command: z.string(),
  })
  .openapi("PodPreset");

const DiskUsage = z
  .object({
    used_bytes: z.number().int(),
    limit_bytes: z.number().int().openapi({ description: "the plan's disk" }),
    percent: z.number(),
    paths: z.array(z.object({ path: z.string(), bytes: z.number().int() })).openapi({
      description: "the home's top-level entries, largest first",
    }),
  })
  .openapi("DiskUsage");

const ReloadResult = z
  .object({
    status: z.literal("reloaded"),
    services: z.array(z.string()).openapi({ description: "the services restarted", example: ["app"] }),
    preset: z.string(),
    deps_installed: z.enum(["npm", "pip"]).optional().openapi({
      description:
        "set when package.json (npm install, then npm run build if there is a build script) or requirements.txt (~/app/.venv, pip install -r) was installed",
    }),
  })
  .openapi("ReloadResult");

const ReloadFailure = z
  .object({
    error: z.string(),
    deps_output: z.string().openapi({
      description: `the last ${RELOAD_MAX_OUTPUT_BYTES} bytes at most of the failing command's output (all of it is in ~/logs/build.log)`,
    }),
  })
  .openapi("ReloadFailure");

export const insideRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      tags: ["Command runner"],
      operationId: "execPodCommand",
      method: "post",
      path: "/{name}/exec",
      summary: "Run a command in the pod as pod_user (no shell); 200 whatever the exit status",
      request: { params: PodParams, body: jsonBody(ExecRequest) },
      responses: {
        200: jsonResponse(ExecResult, "The command ran (see exit_code and timed_out)"),
        ...errors(400, 401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      return c.json(
        unwrap(await execInPod(serviceContext(c), c.get("caller").teamId, name, c.req.valid("json"))),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Environment"],
      operationId: "getPodEnv",
      method: "get",
      path: "/{name}/env",
      summary: "The app's environment variables, as the pod's .env loader reads them",
      request: { params: PodParams },
      responses: {
        200: jsonResponse(EnvFile, "Variables; `{}` when there is no file"),
        ...errors(401, 404, 409, 503),
      },
    }),
    async (c) =>
      c.json(
        unwrap(await getPodEnv(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Environment"],
      operationId: "setPodEnv",
      method: "put",
      path: "/{name}/env",
      summary: "Merge variables into the app's .env; restarts the app service of nodejs and python pods",
      request: { params: PodParams, body: jsonBody(SetEnvRequest) },
      responses: {
        200: jsonResponse(
          EnvFile.extend({
            restarted: z
              .array(z.string())
              .openapi({ description: '["app"], or [] (static, php, stopped pod)' }),
          }),
          "All variables of the file after the merge",
        ),
        ...errors(400, 401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { vars } = c.req.valid("json");
      return c.json(unwrap(await setPodEnv(serviceContext(c), c.get("caller").teamId, name, vars)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Environment"],
      operationId: "unsetPodEnv",
      method: "delete",
      path: "/{name}/env",
      summary: "Remove variables from the app's .env (restarts the app service like PUT)",
      request: { params: PodParams, body: jsonBody(UnsetEnvRequest) },
      responses: {
        200: jsonResponse(EnvFile, "The variables left"),
        ...errors(400, 401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { keys } = c.req.valid("json");
      return c.json(unwrap(await unsetPodEnv(serviceContext(c), c.get("caller").teamId, name, keys)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Logs"],
      operationId: "getPodLogs",
      method: "get",
      path: "/{name}/logs",
      summary: "The tail of a pod log, or its last lines matching a PCRE2 pattern",
      request: { params: PodParams, query: LogsQuery },
      responses: {
        200: jsonResponse(LogsView, 'Lines; a filtered read with no match carries message "no entries"'),
        ...errors(400, 401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      return c.json(
        unwrap(await readPodLogs(serviceContext(c), c.get("caller").teamId, name, c.req.valid("query"))),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Pods"],
      operationId: "getPodPreset",
      method: "get",
      path: "/{name}/preset",
      summary: "The pod's preset: port, roots, runtime version and start command as the pod has them",
      request: { params: PodParams },
      responses: { 200: jsonResponse(PresetView, "Preset configuration"), ...errors(401, 404, 503) },
    }),
    async (c) =>
      c.json(
        unwrap(await podPreset(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Pods"],
      operationId: "getPodDiskUsage",
      method: "get",
      path: "/{name}/disk-usage",
      summary: "Disk used by the pod's home against the plan's disk",
      request: { params: PodParams },
      responses: { 200: jsonResponse(DiskUsage, "Usage in bytes"), ...errors(401, 404, 409, 503) },
    }),
    async (c) =>
      c.json(
        unwrap(await podDiskUsage(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Pods"],
      operationId: "setPodNodeVersion",
      method: "put",
      path: "/{name}/node-version",
      summary: "Switch a Node.js pod to another Node major; restarts the app",
      request: { params: PodParams, body: jsonBody(z.object({ version: z.enum(NODE_VERSIONS) })) },
      responses: {
        200: jsonResponse(z.object({ node_version: z.enum(NODE_VERSIONS) }), "Switched"),
        ...errors(400, 401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { version } = c.req.valid("json");
      return c.json(
        unwrap(await setNodeVersion(serviceContext(c), c.get("caller").teamId, name, version)),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      tags: ["Pods"],
      operationId: "reloadPod",
      method: "post",
      path: "/{name}/reload",
      summary:
        "Install the app's dependencies (package.json, requirements.txt) and restart its services; starts a stopped pod first",
      request: { params: PodParams },
      responses: {
        200: jsonResponse(ReloadResult, "Reloaded"),
        ...errors(400, 401, 404, 409, 503),
        500: jsonResponse(ReloadFailure, "The dependency install or build failed"),
      },
    }),
    async (c) =>
      c.json(
        unwrap(await reloadPodApp(serviceContext(c), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  );
