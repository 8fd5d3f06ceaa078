import { type Ctx, requireCredential } from "../lib/context";
import { podName } from "../lib/link";

type Opts = { pod?: string; branch?: string; token?: string; build?: string; autoDeploy?: boolean };

/** `git connect REPO`: the pod deploys the repository's branch (on push when its host allows a hook). */
export async function connect(ctx: Ctx, args: string[], opts: Opts & { authToken?: string }) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const git = await ctx.api.call("post", "/api/pods/{name}/git", {
    params: { name },
    body: {
      repo_url: args[0] ?? "",
      branch: opts.branch,
      auth_token: opts.authToken ?? process.env.PODHOST_GIT_TOKEN,
      build_command: opts.build,
      auto_deploy: opts.autoDeploy,
    },
  });
  ctx.out.result(
    git,
    () => `${name} deploys ${git.repo_url} (${git.branch}). podhost deploy starts one now.`,
  );
}

export async function disconnect(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const result = await ctx.api.call("delete", "/api/pods/{name}/git", { params: { name } });
  ctx.out.result(result, () => `${name} is no longer connected to a repository; its deployed code stays.`);
}
