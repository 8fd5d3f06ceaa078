import { fail, ok, type Result } from "../errors";
import { refusedHost } from "../net/addresses";

/**
 * The one policy for repository URLs, run by the Worker on every URL a caller gives (connect,
 * from-repo, the repository helpers: a refusal is a 400 before any host is asked) and by the agent
 * before git runs (agent/git/fetch.ts, which then resolves the name and pins git to the addresses
 * it checked). A repository is fetched by a host, from the host's own network: so only https:// to
 * a public host, never to an address the import fetch would refuse (loopback, private, link-local
 * and cloud metadata, carrier-grade NAT, unique-local, internal names; shared/net/addresses.ts).
 * A token travels with the fetch, so plain http:// is refused: a plain-text hop would show it.
 * Credentials in the URL are refused (they would be stored and shown in clear): `auth_token` is the
 * place for them.
 *
 * `allowHttpLoopback` (the Worker's ALLOW_HTTP_GIT_LOOPBACK, the agent's
 * PODHOST_ALLOW_HTTP_GIT_LOOPBACK: `npm start` and the tests, a git server on this machine) opens
 * exactly `http://` to a loopback host; https:// to loopback and every other inward address stay
 * refused.
 *
 * Every refusal is a fixed sentence per kind that depends only on the URL's text, never on what
 * answers at the address: two URLs differing only in their port get the same answer.
 */

export interface RepoUrlPolicy {
  allowHttpLoopback: boolean;
}

export const REPO_URL_NOT_HTTPS = "must be an https:// Git URL";
export const REPO_URL_NOT_PUBLIC =
  "must name a public host: repositories are never fetched from loopback, private, link-local or internal addresses";

/** `localhost`, 127.0.0.0/8 or [::1] as the URL parser leaves them. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === "localhost" || h === "[::1]") return true;
  const parts = h.split(".");
  return (
    parts.length === 4 && parts[0] === "127" && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) < 256)
  );
}

/** The URL, checked; or a 400 naming the field and the rule it breaks. */
export function checkRepoUrl(raw: string, policy: RepoUrlPolicy, field = "repo_url"): Result<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail("bad_request", `${field}: ${REPO_URL_NOT_HTTPS}`);
  }
  if (url.username || url.password)
    return fail(
      "bad_request",
      `${field}: must not contain credentials; give the access token as auth_token instead`,
    );
  const loopbackHttp = url.protocol === "http:" && policy.allowHttpLoopback && isLoopbackHost(url.hostname);
  if (url.protocol !== "https:" && !loopbackHttp)
    return fail("bad_request", `${field}: ${REPO_URL_NOT_HTTPS}`);
  if (!loopbackHttp && refusedHost(url.hostname, false) !== null)
    return fail("bad_request", `${field}: ${REPO_URL_NOT_PUBLIC}`);
  if (url.search || url.hash) return fail("bad_request", `${field}: must not have a query or a fragment`);
  if (url.pathname.replace(/\/+$/, "").length < 2)
    return fail("bad_request", `${field}: must name a repository`);
  return ok(url);
}

/** Whether `url` (checked) is the http:// loopback form only `allowHttpLoopback` opens. */
export const isLoopbackHttp = (url: URL) => url.protocol === "http:" && isLoopbackHost(url.hostname);
