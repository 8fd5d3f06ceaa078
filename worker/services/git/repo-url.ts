import { fail, ok, type Result } from "../../../shared/errors";
import {
  checkRepoUrl as checkRepoUrlPolicy,
  isLoopbackHttp,
  REPO_URL_NOT_PUBLIC,
} from "../../../shared/git/repo-url";
import { parseIpv4, refusedHost } from "../../../shared/net/addresses";
import type { Bindings } from "../../env";
import { lookupAddresses } from "../imports/resolve";

/**
 * Repository URLs and branch names as users give them. The URL rule is the one the agent applies
 * too (shared/git/repo-url.ts): https:// to a public host only, no credentials; plain http:// only
 * to a loopback host and only when ALLOW_HTTP_GIT_LOOPBACK is "true" (`npm start` and the tests: a
 * git server on this machine). A refusal is a 400 here, before any host is asked.
 */
export function checkRepoUrl(env: Bindings, raw: string, field = "repo_url"): Result<URL> {
  return checkRepoUrlPolicy(raw, { allowHttpLoopback: env.ALLOW_HTTP_GIT_LOOPBACK === "true" }, field);
}

/**
 * checkRepoUrl, then the host name's DNS answers (DNS_RESOLVER_URL, as URL imports look them up):
 * a name any of whose A or AAAA records the policy refuses is the same 400, before any host is
 * asked. A name the resolver has no answer for goes on: the host that fetches resolves it again,
 * refuses inward answers and pins git to what it checked (agent/git/target.ts), which also closes
 * a name answering differently now and then.
 */
export async function checkRepoTarget(env: Bindings, raw: string, field = "repo_url"): Promise<Result<URL>> {
  const url = checkRepoUrl(env, raw, field);
  if (!url.ok || isLoopbackHttp(url.value)) return url;
  const host = url.value.hostname;
  if (host.startsWith("[") || parseIpv4(host) !== null) return url;
  const addresses = await lookupAddresses(env.DNS_RESOLVER_URL, host);
  if (!addresses.ok) return url;
  const inward = addresses.value.some((a) => refusedHost(a.includes(":") ? `[${a}]` : a, false) !== null);
  return inward ? fail("bad_request", `${field}: ${REPO_URL_NOT_PUBLIC}`) : url;
}

/** What two URLs of one repository have in common: `github.com/acme/site` for `https://GitHub.com/acme/site.git/`. */
export function repoKey(url: string): string {
  try {
    const u = new URL(url);
    const path = u.pathname.replace(/\/+$/, "").replace(/\.git$/i, "");
    return `${u.host}${path}`.toLowerCase();
  } catch {
    return url.toLowerCase();
  }
}

export interface HostedRepo {
  owner: string;
  repo: string;
}

/** `{owner, repo}` when the URL is a repository of the git host (REPOHOST_GIT_BASE), else undefined. */
export function hostedRepo(env: Bindings, url: string): HostedRepo | undefined {
  const base = repoKey(env.REPOHOST_GIT_BASE ?? "https://github.com");
  const key = repoKey(url);
  if (!key.startsWith(`${base}/`)) return undefined;
  const [owner, repo, ...rest] = key.slice(base.length + 1).split("/");
  if (!owner || !repo || rest.length > 0) return undefined;
  return { owner, repo };
}

const BRANCH_RULE =
  "must be a branch name: letters, digits and . _ / -, not starting with - or /, without .. or //, not ending with / . or .lock";

/** A git branch name (git check-ref-format's rules, the ones a user can break by accident). */
export function checkBranch(branch: string, field = "branch"): Result<string> {
  const bad =
    !/^[A-Za-z0-9._/-]{1,255}$/.test(branch) ||
    /^[-/.]/.test(branch) ||
    branch.includes("..") ||
    branch.includes("//") ||
    branch.includes("/.") ||
    /[/.]$/.test(branch) ||
    branch.endsWith(".lock");
  return bad ? fail("bad_request", `${field}: ${BRANCH_RULE}`) : ok(branch);
}

/** A build command line: one line of text, or null/empty for detection. */
export function checkBuildCommand(command: string | null | undefined): Result<string | null> {
  if (command === undefined || command === null || command.trim() === "") return ok(null);
  if (/[\r\n\0]/.test(command)) return fail("bad_request", "build_command: must be one line");
  return ok(command.trim());
}
