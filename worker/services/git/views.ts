import type { DeploymentRow, DeploymentStatus, DeploymentTrigger, GitConfigRow } from "../../db/schema";
import type { Bindings } from "../../env";

/** A deployment as the API shows it (spec: Deployment), plus when it started and why it failed. */
export interface DeploymentView {
  id: string;
  status: DeploymentStatus;
  trigger: DeploymentTrigger;
  commit_sha: string | null;
  commit_message: string | null;
  created_at: string;
  /** null while it waits its turn (another deploy of the pod is running) */
  started_at: string | null;
  finished_at: string | null;
  /** a rollback's target */
  rollback_of: string | null;
  /** a failed deployment's class (DeployFailureClass) and one-line reason */
  failure: { class: string; message: string } | null;
}

export const toDeploymentView = (d: DeploymentRow): DeploymentView => ({
  id: d.id,
  status: d.status,
  trigger: d.trigger,
  commit_sha: d.commitSha,
  commit_message: d.commitMessage,
  created_at: d.createdAt,
  started_at: d.startedAt,
  finished_at: d.finishedAt,
  rollback_of: d.rollbackOf,
  failure:
    d.status === "failed" ? { class: d.failureClass ?? "unknown", message: d.failureMessage ?? "" } : null,
});

export interface GitConfigView {
  repo_url: string;
  branch: string;
  auto_deploy: boolean;
  /** empty: detected on each deploy */
  build_command: string;
  last_deployment: {
    id: string;
    status: DeploymentStatus;
    commit_sha: string | null;
    commit_message: string | null;
    created_at: string;
    finished_at: string | null;
  } | null;
  created_at: string;
  /** the git host's push hook: created by the service (`auto: true`), or why not */
  webhook: { auto: boolean; note: string | null };
  /** the generic push webhook of this pod (its secret is shown once, on connect) */
  webhook_url: string;
}

export const genericWebhookUrl = (env: Bindings, podName: string) =>
  `${env.PUBLIC_URL.replace(/\/+$/, "")}/api/webhooks/git/${podName}`;

export const repohostWebhookUrl = (env: Bindings) =>
  `${env.PUBLIC_URL.replace(/\/+$/, "")}/api/webhooks/repohost`;

export function toGitConfigView(
  env: Bindings,
  podName: string,
  c: GitConfigRow,
  last: DeploymentRow | undefined,
): GitConfigView {
  return {
    repo_url: c.repoUrl,
    branch: c.branch,
    auto_deploy: c.autoDeploy,
    build_command: c.buildCommand ?? "",
    last_deployment: last
      ? {
          id: last.id,
          status: last.status,
          commit_sha: last.commitSha,
          commit_message: last.commitMessage,
          created_at: last.createdAt,
          finished_at: last.finishedAt,
        }
      : null,
    created_at: c.createdAt,
    webhook: { auto: c.hookId !== null, note: c.hookNote },
    webhook_url: genericWebhookUrl(env, podName),
  };
}
