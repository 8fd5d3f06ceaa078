import { z } from "@hono/zod-openapi";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ok, type Result } from "../../../shared/errors";
import type { FAIR_SHARE_LIMITS } from "../../http/rate-limit";
import { type RouteAudit, TOOL_ACTIONS } from "../../services/audit/actions";
import type { Caller } from "../../services/auth/caller";
import { createBackup } from "../../services/backups/create";
import { listBackups } from "../../services/backups/manage";
import { restoreBackup } from "../../services/backups/restore";
import type { ServiceContext } from "../../services/context";
import { addDomain } from "../../services/domains/add";
import { listDomains } from "../../services/domains/list";
import { verifyDomain } from "../../services/domains/verify";
import { listPodFiles } from "../../services/files/list";
import { readPodFile, writePodFile } from "../../services/files/transfer";
import { connectRepository } from "../../services/git/config";
import { deployPod } from "../../services/git/deployments";
import { getPodEnv, setPodEnv, unsetPodEnv } from "../../services/inside/env";
import { execInPod } from "../../services/inside/exec";
import { readPodLogs } from "../../services/inside/logs";
import { toolResult } from "../../services/mcp/tool-result";
import { createPod } from "../../services/pods/create";
import { listPodEvents } from "../../services/pods/events";
import { listPods } from "../../services/pods/list";
import { getPodLive, powerPod } from "../../services/pods/power";
import { deletePod } from "../../services/pods/remove";
import { getServiceCredentials } from "../../services/services/credentials";
import { installService } from "../../services/services/install";
import { listServices } from "../../services/services/list";
import { BackupIdParams } from "../backups/schemas";
import { AddDomainRequest } from "../domains/add";
import { DomainParams } from "../domains/schemas";
import { WriteRequest } from "../files/write";
import { ConnectRequest } from "../git/connect";
import { ExecRequest } from "../inside/exec";
import { LogsQuery } from "../inside/logs";
import { EnvName } from "../inside/schemas";
import { SetEnvRequest } from "../inside/set-env";
import { EventsQuery } from "../pods/events";
import { CreatePodRequest, Paging, PodParams } from "../pods/schemas";
import { ServiceType } from "../services/schemas";

/** What a tool needs from its request: who calls, and the limits the REST routes apply. */
export interface ToolContext {
  ctx: ServiceContext;
  caller: Caller;
  /** the client's country (request.cf), for a new pod's region */
  country?: string;
  /** the REST route's per-IP limit of pod creation */
  limitCreate(): Promise<void>;
  /** the REST route's per-pod and per-team fair share */
  limitFairShare(kind: keyof typeof FAIR_SHARE_LIMITS, pod: string): Promise<void>;
  /** records a changing tool's call in the audit log, as the REST route's middleware does */
  audit(entry: RouteAudit, input: Record<string, unknown>, status: number): void;
}

/** The REST status a tool's result stands for: a tool error's text starts with it (toolError). */
function statusOf(result: CallToolResult): number {
  if (!result.isError) return 200;
  const first = result.content[0];
  const status = first?.type === "text" ? Number(first.text.slice(0, 3)) : Number.NaN;
  return Number.isInteger(status) && status >= 400 && status < 600 ? status : 500;
}

const Pod = PodParams.shape.name.describe("the pod's name");
const podInput = z.object({ name: Pod });

/**
 * The MCP tools: each is a thin call of the service verb its REST route calls, with the route's
 * own input schema, its team scope (the connector's team) and its limits, so a tool can do no more
 * than the route (docs/mcp.md lists them beside their routes).
 */
export function registerTools(server: McpServer, t: ToolContext) {
  const teamId = t.caller.teamId;
  const { ctx } = t;
  /** a limit refused is a tool error like any other failure (429 with the wait) */
  const limited = async (limit: () => Promise<void>, run: () => Promise<Result<unknown>>) => {
    try {
      await limit();
    } catch (error) {
      if (error instanceof Error && "status" in error && error.status === 429) {
        return toolResult({ ok: false, code: "rate_limited", message: error.message });
      }
      throw error;
    }
    return toolResult(await run());
  };
  const tool = <S extends z.ZodObject>(
    name: string,
    description: string,
    inputSchema: S,
    run: (input: z.infer<S>) => Promise<CallToolResult>,
    annotations: { readOnlyHint?: boolean; destructiveHint?: boolean } = {},
  ) =>
    // The SDK validates the arguments against the schema (400-style tool errors name the field).
    // A changing tool is recorded in the audit log with its outcome (TOOL_ACTIONS).
    server.registerTool(name, { description, inputSchema, annotations }, (async (input: z.infer<S>) => {
      const result = await run(input);
      const entry = TOOL_ACTIONS[name];
      if (entry) t.audit(entry, input, statusOf(result));
      return result;
    }) as never);

  tool(
    "list_pods",
    "List the team's pods, newest first (name, status, domain, preset, plan).",
    Paging,
    async (page) => toolResult(ok(await listPods({ ctx, teamId, input: page }))),
    { readOnlyHint: true },
  );
  tool(
    "create_pod",
    "Create a pod (answers at once with status `creating`; poll get_pod until `running`). Presets: static, php, nodejs, python. Its page is served at its `domain`.",
    CreatePodRequest,
    (input) => limited(t.limitCreate, () => createPod({ ctx, caller: t.caller, input, country: t.country })),
  );
  tool(
    "get_pod",
    "A pod's details and live status (asks its host).",
    podInput,
    async (input) => toolResult(await getPodLive({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  for (const action of ["start", "stop", "restart"] as const) {
    tool(
      `${action}_pod`,
      `${action[0]?.toUpperCase()}${action.slice(1)} a pod; waits up to 30 s for its host to confirm.`,
      podInput,
      async (input) => toolResult(await powerPod({ ctx, teamId, input: { ...input, action } })),
    );
  }
  tool(
    "delete_pod",
    "Delete a pod, its files and its backups. Cannot be undone; the name stays reserved for 7 days.",
    podInput,
    async (input) => toolResult(await deletePod({ ctx, teamId, input })),
    { destructiveHint: true },
  );
  tool(
    "list_files",
    "List a directory of the pod (default: the app root, /home/pod_user/app).",
    podInput.extend({ path: z.string().max(4096).optional().describe("an absolute path in the pod") }),
    (input) =>
      limited(
        () => t.limitFairShare("files", input.name),
        () => listPodFiles({ ctx, teamId, input }),
      ),
    { readOnlyHint: true },
  );
  tool(
    "read_file",
    "Read a UTF-8 text file of the pod (at most 1 MiB).",
    podInput.extend({ path: z.string().max(4096).describe("an absolute path in the pod") }),
    (input) =>
      limited(
        () => t.limitFairShare("files", input.name),
        () => readPodFile({ ctx, teamId, input }),
      ),
    { readOnlyHint: true },
  );
  tool(
    "write_file",
    "Write a text file in the pod (created or replaced atomically; parent directories are created). The app root is /home/pod_user/app; a static or PHP pod serves it as the site root.",
    podInput.extend(WriteRequest.shape),
    (input) =>
      limited(
        () => t.limitFairShare("files", input.name),
        () => writePodFile({ ctx, teamId, input }),
      ),
  );
  tool(
    "run_command",
    'Run a command in the pod as pod_user, without a shell (argv; use ["sh", "-c", "…"] for one). Answers exit code, stdout and stderr.',
    podInput.extend(ExecRequest.shape),
    (input) =>
      limited(
        () => t.limitFairShare("exec", input.name),
        () => execInPod({ ctx, teamId, input }),
      ),
  );
  tool(
    "read_logs",
    "The last lines of a pod's log: app (default), web, error or build; optionally filtered by a pattern.",
    podInput.extend(LogsQuery.shape),
    async (input) => toolResult(await readPodLogs({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "list_events",
    "The pod's activity log (created, started, deployment, error …), newest first.",
    podInput.extend(EventsQuery.shape),
    async (input) => toolResult(await listPodEvents({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "get_env",
    "The pod's environment variables (its .env file).",
    podInput,
    async (input) => toolResult(await getPodEnv({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "set_env",
    "Set environment variables (merged into the pod's .env; the app restarts to read them).",
    podInput.extend(SetEnvRequest.shape),
    async (input) => toolResult(await setPodEnv({ ctx, teamId, input })),
  );
  tool(
    "unset_env",
    "Remove environment variables from the pod's .env.",
    podInput.extend({ keys: z.array(EnvName).min(1).max(100) }),
    async (input) => toolResult(await unsetPodEnv({ ctx, teamId, input })),
  );
  tool(
    "connect_git",
    "Connect a git repository (HTTPS) to a running pod: branch (default main), an access token for a private one (kept encrypted, never shown again), build command, auto_deploy on push (default true). Then deploy_git.",
    podInput.extend(ConnectRequest.shape),
    async (input) => toolResult(await connectRepository({ ctx, teamId, input })),
  );
  tool(
    "deploy_git",
    "Deploy the pod's connected git repository now (connect one with connect_git). Answers the deployment; follow it with list_events.",
    podInput,
    (input) =>
      limited(
        () => t.limitFairShare("deploy", input.name),
        () => deployPod({ ctx, teamId, input }),
      ),
  );
  tool(
    "create_backup",
    "Back up the pod's files and databases (answers at once; the backup completes in the background).",
    podInput.extend({ note: z.string().max(500).optional() }),
    (input) =>
      limited(
        () => t.limitFairShare("backup", input.name),
        () => createBackup({ ctx, teamId, input }),
      ),
  );
  tool(
    "list_backups",
    "The pod's backups and the plan's limit.",
    podInput,
    async (input) => toolResult(await listBackups({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "restore_backup",
    "Restore a completed backup into its pod: the app's files are replaced and its databases reloaded (answers at once; follow it with list_events: restore_completed or restore_failed).",
    podInput.extend({ id: BackupIdParams.shape.id }),
    (input) =>
      limited(
        () => t.limitFairShare("backup", input.name),
        () => restoreBackup({ ctx, teamId, input }),
      ),
    { destructiveHint: true },
  );
  tool(
    "list_services",
    "The pod's database services (postgresql, mysql, redis) with their status, version and port on 127.0.0.1.",
    podInput,
    async (input) => toolResult(await listServices({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "install_service",
    "Install a database service beside the pod's app (Build plan or higher), reachable by the app on 127.0.0.1 (answers at once with status installing; poll list_services).",
    podInput.extend({ service_type: ServiceType }),
    (input) =>
      limited(
        () => t.limitFairShare("services", input.name),
        () => installService({ ctx, teamId, input }),
      ),
  );
  tool(
    "service_credentials",
    "The connection details of a pod's database service: host, port, user, password, database and a URL.",
    podInput.extend({ service_type: ServiceType }),
    async (input) =>
      toolResult(
        await getServiceCredentials({
          ctx,
          teamId,
          input: { name: input.name, serviceType: input.service_type },
        }),
      ),
    { readOnlyHint: true },
  );
  tool(
    "list_domains",
    "The pod's custom domains and their verification status and TXT record.",
    podInput,
    async (input) => toolResult(await listDomains({ ctx, teamId, input })),
    { readOnlyHint: true },
  );
  tool(
    "add_domain",
    "Add a custom domain to the pod; it is served once verified: publish the TXT record it answers, then verify_domain.",
    podInput.extend(AddDomainRequest.shape),
    async (input) => toolResult(await addDomain({ ctx, teamId, input })),
  );
  tool(
    "verify_domain",
    "Check a custom domain's TXT record; once it matches, the pod's web server answers the domain.",
    podInput.extend({ id: DomainParams.shape.id.describe("the domain's id (list_domains)") }),
    async (input) =>
      limited(
        () => t.limitFairShare("ingress", input.name),
        () => verifyDomain({ ctx, teamId, input }),
      ),
  );
}
