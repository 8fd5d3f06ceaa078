import { createRouter } from "../../http/router";
import { registerGetPodDiskUsage } from "./disk-usage";
import { registerExecPodCommand } from "./exec";
import { registerGetPodEnv } from "./get-env";
import { registerGetPodLogs } from "./logs";
import { registerSetPodNodeVersion } from "./node-version";
import { registerGetPodPreset } from "./preset";
import { registerReloadPod } from "./reload";
import { registerSetPodEnv } from "./set-env";
import { registerUnsetPodEnv } from "./unset-env";

/**
 * Working inside a pod, mounted at /api/pods beside the pods router, one file per operation: the
 * command runner, the app's environment variables, logs, preset details, disk usage, the Node.js
 * version switch and the app's reload.
 *
 * The order below is the order of the OpenAPI document's paths.
 */
export const insideRouter = createRouter();

registerExecPodCommand(insideRouter);
registerGetPodEnv(insideRouter);
registerSetPodEnv(insideRouter);
registerUnsetPodEnv(insideRouter);
registerGetPodLogs(insideRouter);
registerGetPodPreset(insideRouter);
registerGetPodDiskUsage(insideRouter);
registerSetPodNodeVersion(insideRouter);
registerReloadPod(insideRouter);
