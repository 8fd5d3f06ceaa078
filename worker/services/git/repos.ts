import { fail, type Result } from "../../../shared/errors";
import type { DetectedCommands } from "../../../shared/protocol/git";
import { callHost } from "../../durable-objects/host-agent/client";
import type { ServiceContext } from "../context";
import { anyPlaceableHosts } from "../hosts/hosts";
import { checkBranch, checkRepoTarget } from "./repo-url";

/**
 * The two read-only helpers behind `GET /api/repos/branches` and `/api/repos/inspect` (and
 * from-repo's preset detection): `git ls-remote` or a shallow fetch on any online host that takes
 * pods, in any region, the least loaded first (the next one when the first is down or busy with
 * its most lookups at once); 503 when there is none. The token rides along for this one command and
 * is kept nowhere. The routes count them per IP and account and cap an account's in progress
 * (worker/http/repo-lookup-limit.ts); the URL is checked first, so a refused one asks no host.
 */

const LOOK_TIMEOUT_MS = 60_000;

async function onAnyHost<T>(
  ctx: ServiceContext,
  run: (hostId: string) => Promise<Result<T>>,
): Promise<Result<T>> {
  const hosts = await anyPlaceableHosts(ctx.db);
  let last: Result<T> = fail(
    "unavailable",
    "no server is online to look at the repository; try again shortly",
  );
  for (const host of hosts.slice(0, 2)) {
    last = await run(host.id);
    // a host that is down, or busy with its most lookups at once: the next one may take it
    if (last.ok || (last.code !== "unavailable" && last.code !== "rate_limited")) return last;
  }
  return last;
}

export async function listBranches({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { repo_url: string; auth_token?: string };
}): Promise<Result<{ branches: string[]; default_branch: string | null }>> {
  const url = await checkRepoTarget(ctx.env, input.repo_url);
  if (!url.ok) return url;
  const source = { url: input.repo_url, ...(input.auth_token ? { token: input.auth_token } : {}) };
  return onAnyHost(ctx, (hostId) =>
    callHost(ctx.env, hostId, "repo.branches", { source }, { timeoutMs: LOOK_TIMEOUT_MS }),
  );
}

export async function inspectRepository({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { repo_url: string; branch?: string; auth_token?: string };
}): Promise<Result<DetectedCommands>> {
  const url = await checkRepoTarget(ctx.env, input.repo_url);
  if (!url.ok) return url;
  const branch = checkBranch(input.branch ?? "main");
  if (!branch.ok) return branch;
  const source = {
    url: input.repo_url,
    branch: branch.value,
    ...(input.auth_token ? { token: input.auth_token } : {}),
  };
  return onAnyHost(ctx, (hostId) =>
    callHost(ctx.env, hostId, "repo.inspect", { source }, { timeoutMs: LOOK_TIMEOUT_MS }),
  );
}
