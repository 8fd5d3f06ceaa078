import { fail, ok, type Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import type { HostedRepo } from "./repo-url";

/**
 * The git host's REST API (GitHub's wire format, at GITHUB_API_BASE): the push hook the service
 * creates on connect and deletes on disconnect, and the commit statuses of deployments. Every call
 * uses the user's own token; none of them is ever fatal to what the user asked for, so failures come
 * back as values with a sentence saying why (the token itself is never in it).
 */

const apiBase = (env: Bindings) => (env.GITHUB_API_BASE ?? "https://api.github.com").replace(/\/+$/, "");
const TIMEOUT_MS = 10_000;

async function request(
  env: Bindings,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Result<{ status: number; json: unknown }>> {
  let res: Response;
  try {
    res = await fetch(`${apiBase(env)}${path}`, {
      method,
      headers: {
        accept: "application/vnd.github+json",
        authorization: `Bearer ${token}`,
        "x-github-api-version": "2022-11-28",
        "user-agent": "podhost",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    return fail(
      "unavailable",
      `the git host's API did not answer: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const message = (json as { message?: unknown } | undefined)?.message;
    return fail(
      res.status === 404 ? "not_found" : "unavailable",
      `the git host answered ${res.status}${typeof message === "string" ? `: ${message.slice(0, 200)}` : ""}`,
    );
  }
  return ok({ status: res.status, json });
}

const repoPath = (r: HostedRepo) => `/repos/${encodeURIComponent(r.owner)}/${encodeURIComponent(r.repo)}`;

/** `POST /repos/{owner}/{repo}/hooks`: a push hook (JSON) posting to `url`, signed with `secret`. */
export async function createPushHook(
  env: Bindings,
  token: string,
  repo: HostedRepo,
  hook: { url: string; secret: string },
): Promise<Result<string>> {
  const created = await request(env, token, "POST", `${repoPath(repo)}/hooks`, {
    name: "web",
    active: true,
    events: ["push"],
    config: { url: hook.url, content_type: "json", secret: hook.secret, insecure_ssl: "0" },
  });
  if (!created.ok) return created;
  const id = (created.value.json as { id?: unknown } | undefined)?.id;
  return typeof id === "number" || typeof id === "string"
    ? ok(String(id))
    : fail("unavailable", "the git host created the hook but did not say its id");
}

/** `DELETE /repos/{owner}/{repo}/hooks/{id}`; a hook already gone counts as deleted. */
export async function deletePushHook(
  env: Bindings,
  token: string,
  repo: HostedRepo,
  hookId: string,
): Promise<Result<true>> {
  const deleted = await request(
    env,
    token,
    "DELETE",
    `${repoPath(repo)}/hooks/${encodeURIComponent(hookId)}`,
  );
  return deleted.ok || deleted.code === "not_found" ? ok(true) : deleted;
}

export type CommitState = "pending" | "success" | "failure" | "error";

/** `POST /repos/{owner}/{repo}/statuses/{sha}` under the context `podhost/deploy`. */
export async function postCommitStatus(
  env: Bindings,
  token: string,
  repo: HostedRepo,
  sha: string,
  status: { state: CommitState; description: string; targetUrl?: string },
): Promise<Result<true>> {
  const posted = await request(env, token, "POST", `${repoPath(repo)}/statuses/${encodeURIComponent(sha)}`, {
    state: status.state,
    description: status.description.slice(0, 140),
    context: "podhost/deploy",
    ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
  });
  return posted.ok ? ok(true) : posted;
}
