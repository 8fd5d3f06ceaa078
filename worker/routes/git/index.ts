import { createRouter } from "../../http/router";
import { registerListRepoBranches } from "./branches";
import { registerConnectPodGit } from "./connect";
import { registerDeployPodGit } from "./deploy";
import { registerStreamPodDeploymentLog } from "./deployment-log";
import { registerDisconnectPodGit } from "./disconnect";
import { registerCreatePodFromRepo } from "./from-repo";
import { registerGetPodGit } from "./get";
import { registerGetPodDeployment } from "./get-deployment";
import { registerInspectRepo } from "./inspect";
import { registerListPodDeployments } from "./list-deployments";
import { registerRollbackPodGit } from "./rollback";
import { registerUpdatePodGit } from "./update";
import { registerGetPodGitWebhookSecret } from "./webhook-secret";
import { registerWebhooks } from "./webhooks";

/**
 * Git deployments (docs/git.md), mounted at /api: a pod's repository and deployments under
 * /api/pods/{name}/git, a pod from a repository, the two repository helpers under /api/repos, and
 * the public push webhooks under /api/webhooks. One file per operation; the order below is the
 * order of the OpenAPI document's paths.
 */
export const gitRouter = createRouter();

registerCreatePodFromRepo(gitRouter);
registerGetPodGit(gitRouter);
registerConnectPodGit(gitRouter);
registerUpdatePodGit(gitRouter);
registerDisconnectPodGit(gitRouter);
registerGetPodGitWebhookSecret(gitRouter);
registerDeployPodGit(gitRouter);
registerListPodDeployments(gitRouter);
registerGetPodDeployment(gitRouter);
registerStreamPodDeploymentLog(gitRouter);
registerRollbackPodGit(gitRouter);
registerListRepoBranches(gitRouter);
registerInspectRepo(gitRouter);
registerWebhooks(gitRouter);
