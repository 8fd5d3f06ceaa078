import { createApp } from "./app";
import { routeToPod } from "./edge";
import type { Bindings } from "./env";
import { runScheduledJobs } from "./scheduled";

export { HostAgent } from "./durable-objects/host-agent/object";
export { RateLimiter } from "./durable-objects/rate-limiter";
export { TerminalRelay } from "./durable-objects/terminal-relay/object";
export { TransferRelay } from "./durable-objects/transfer-relay/object";
export { AlertDeliverWorkflow } from "./workflows/alert-deliver";
export { MailSendWorkflow } from "./workflows/mail-send";
export { PodBackupWorkflow } from "./workflows/pod-backup";
export { PodCodingAgentWorkflow } from "./workflows/pod-coding-agent";
export { PodCreateWorkflow } from "./workflows/pod-create";
export { PodDeployWorkflow } from "./workflows/pod-deploy";
export { PodMoveWorkflow } from "./workflows/pod-move";
export { PodRestoreWorkflow } from "./workflows/pod-restore";
export { PodServiceWorkflow } from "./workflows/pod-service";

const app = createApp();

export default {
  // a pod's host name goes to the edge router (docs/edge.md); every other name is the API's
  fetch: async (request: Request, env: Bindings, ctx: ExecutionContext) =>
    (await routeToPod(request, env, ctx)) ?? app.fetch(request, env, ctx),
  scheduled: (controller, env, ctx) => ctx.waitUntil(runScheduledJobs(env, controller.scheduledTime)),
} satisfies ExportedHandler<Bindings>;
