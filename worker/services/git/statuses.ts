import type { Bindings } from "../../env";
import { hostedRepo } from "./repo-url";
import { type CommitState, postCommitStatus } from "./repohost";

/**
 * A deployment's commit status at the git host (hosted repositories with a token): `pending` once
 * the commit is known, then `success` or `failure`. Reporting is a courtesy: a failure is logged
 * (without the token) and never fails the deploy.
 */
export async function reportCommitStatus(
  env: Bindings,
  report: {
    repoUrl: string | null;
    token: string | undefined;
    sha: string | null | undefined;
    state: CommitState;
    description: string;
    podName: string;
    deploymentId: string;
  },
): Promise<{ reported: boolean; reason?: string }> {
  if (!report.repoUrl || !report.sha) return { reported: false, reason: "no commit" };
  const repo = hostedRepo(env, report.repoUrl);
  if (!repo) return { reported: false, reason: "not a hosted repository" };
  if (!report.token) return { reported: false, reason: "no access token" };
  try {
    const posted = await postCommitStatus(env, report.token, repo, report.sha, {
      state: report.state,
      description: report.description,
      targetUrl: `${env.PUBLIC_URL.replace(/\/+$/, "")}/api/pods/${report.podName}/git/deployments/${report.deploymentId}`,
    });
    if (posted.ok) return { reported: true };
    console.warn(
      JSON.stringify({
        msg: "commit status not reported",
        deploymentId: report.deploymentId,
        error: posted.message,
      }),
    );
    return { reported: false, reason: posted.message };
  } catch (error) {
    console.warn(
      JSON.stringify({
        msg: "commit status not reported",
        deploymentId: report.deploymentId,
        error: String(error),
      }),
    );
    return { reported: false, reason: String(error) };
  }
}
