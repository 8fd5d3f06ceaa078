import { lookup } from "node:dns/promises";
import { checkRepoUrl, isLoopbackHttp, REPO_URL_NOT_PUBLIC } from "../../shared/git/repo-url";
import { refusedHost } from "../../shared/net/addresses";
import { DeployFailure } from "./failure";

/**
 * Where git may go: the repository-URL policy the Worker applies (shared/git/repo-url.ts), then the
 * host name resolved here and every address checked against the same address policy, and git
 * pinned to exactly those addresses (`http.curloptResolve`), so a name cannot answer one address to
 * the check and another to git (DNS rebinding). Redirects are refused (`http.followRedirects
 * false` in ./fetch.ts): a public repository cannot send git on to an inward address either. git
 * runs in the host's network namespace, outside the pods' egress fence: this check is its fence.
 *
 * Refusals are fixed sentences (the class `repo_unreachable`, 400 where an op answers with a result):
 * nothing of what answered, or did not, at the address reaches the caller.
 */

export interface RepoTarget {
  /** the URL as git is given it */
  url: string;
  /** plain http:// to a loopback host (only with PODHOST_ALLOW_HTTP_GIT_LOOPBACK) */
  loopbackHttp: boolean;
  /** `host:port:address[,address…]` for curl's resolve list, or null for an address literal */
  pin: string | null;
}

const LOOKUP_TIMEOUT_MS = 10_000;
const MAX_ADDRESSES = 16;

/** a refused target: 400 where an op answers with a result, a `repo_unreachable` outcome in a deploy */
export const refusedTarget = (message: string) =>
  new DeployFailure("repo_unreachable", message, "bad_request");

/** The URL checked like the Worker checks it (no lookup): throws a refusal. */
export function checkSourceUrl(raw: string, allowHttpLoopback: boolean): URL {
  const checked = checkRepoUrl(raw, { allowHttpLoopback }, "the repository URL");
  if (!checked.ok) throw refusedTarget(checked.message);
  return checked.value;
}

type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: Lookup = (host) => lookup(host, { all: true, verbatim: true });

/** The URL checked, its host resolved and every address checked; git is then pinned to them. */
export async function repoTarget(
  raw: string,
  allowHttpLoopback: boolean,
  resolve: Lookup = systemLookup,
): Promise<RepoTarget> {
  const url = checkSourceUrl(raw, allowHttpLoopback);
  const loopbackHttp = isLoopbackHttp(url);
  const host = url.hostname;
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  // An address literal (checked above) is not resolved; `localhost` is this machine's loopback.
  if (host.startsWith("[") || /^[0-9.]+$/.test(host)) return { url: url.href, loopbackHttp, pin: null };
  if (loopbackHttp) return { url: url.href, loopbackHttp, pin: `${host}:${port}:127.0.0.1` };
  let found: { address: string; family: number }[];
  try {
    found = await withTimeout(resolve(host), LOOKUP_TIMEOUT_MS);
  } catch {
    throw new DeployFailure("repo_unreachable", `the repository's host name could not be resolved`);
  }
  if (found.length === 0)
    throw new DeployFailure("repo_unreachable", `the repository's host name could not be resolved`);
  const literals = found
    .slice(0, MAX_ADDRESSES)
    .map((a) => (a.family === 6 || a.address.includes(":") ? `[${a.address}]` : a.address));
  // One inward address among the answers refuses the name: curl may pick any of them.
  if (literals.some((l) => refusedHost(l, false) !== null))
    throw refusedTarget(`the repository URL: ${REPO_URL_NOT_PUBLIC}`);
  return { url: url.href, loopbackHttp, pin: `${host}:${port}:${literals.join(",")}` };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("lookup timed out")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
