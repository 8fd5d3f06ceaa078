import type { Context, MiddlewareHandler } from "hono";
import { rateLimitAddress } from "../../shared/net/addresses";
import type { BackoffPolicy } from "../durable-objects/rate-limiter";
import type { Bindings } from "../env";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/** The spec's Limits table: requests per window per client IP. */
export const RATE_LIMITS = {
  login: { limit: 5, windowMs: 60_000 },
  register: { limit: 3, windowMs: 60_000 },
  forgotPassword: { limit: 3, windowMs: 60_000 },
  createPod: { limit: 50, windowMs: 3_600_000 },
  imports: { limit: 20, windowMs: 3_600_000 },
  /** visitors' comments through a pod's feedback widget (not in the spec's table: docs/feedback.md) */
  feedback: { limit: 10, windowMs: 600_000 },
  /** a visitor reading their own comments back (the widget does once per page view) */
  feedbackMine: { limit: 120, windowMs: 60_000 },
  /** anonymous clicks on referral links (docs/affiliates.md): each counted one is a row */
  affiliateVisit: { limit: 30, windowMs: 600_000 },
  /** OAuth dynamic client registrations (docs/connectors.md): each is a stored client */
  oauthRegister: { limit: 10, windowMs: 3_600_000 },
  /** device logins started (`POST /oauth/device_authorization`): each stores a row for ten minutes */
  deviceAuthorization: { limit: 10, windowMs: 3_600_000 },
  /** codes typed on the device page, per IP and per account: guessing another device's code */
  deviceVerify: { limit: 10, windowMs: 600_000 },
} as const;

/**
 * The client's address as a rate-limit key: an IPv6 address as its /64 (rateLimitAddress).
 * Cloudflare sets CF-Connecting-IP at the edge and overwrites any value a client sends.
 */
export const clientIp = (c: { req: { header(name: string): string | undefined } }) =>
  rateLimitAddress(c.req.header("cf-connecting-ip") ?? "unknown");

/** Counts one request against `route`'s limit for the client's IP; 429 with Retry-After once it is spent. */
export async function enforceRateLimit(
  c: Context<AppEnv>,
  route: keyof typeof RATE_LIMITS,
  /** count on this subject (e.g. `user:{id}`) instead of the client's IP */
  subject?: string,
): Promise<void> {
  await hitRateLimit(c.env, route, subject ?? clientIp(c), subject ? "account" : "IP");
}

/**
 * `route`'s limit counted on the signed-in caller's account and on its team instead of the IP, for
 * calls that reach us from a shared address: an AI platform's MCP client calls /mcp from the
 * platform's few servers, so a per-IP budget would be one for all of that platform's users, and any
 * one of them could spend it for everyone. Goes after requireAuth.
 */
export async function enforceCallerRateLimit(
  c: Context<AppEnv>,
  route: keyof typeof RATE_LIMITS,
): Promise<void> {
  const caller = c.get("caller");
  await hitRateLimit(c.env, route, `user:${caller.user.id}`, "account");
  await hitRateLimit(c.env, route, `team:${caller.teamId}`, "team");
}

async function hitRateLimit(
  env: Bindings,
  route: keyof typeof RATE_LIMITS,
  subject: string,
  scope: string,
): Promise<void> {
  const { limit, windowMs } = RATE_LIMITS[route];
  const decision = await env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`${route}:${subject}`)).hit(
    limit,
    windowMs,
  );
  if (!decision.allowed) {
    throw new ApiError(
      "rate_limited",
      `too many requests: at most ${limit} per ${windowMs / 60_000} minute(s) per ${scope}; retry in ${decision.retryAfter} s`,
      {},
      { "Retry-After": String(decision.retryAfter) },
    );
  }
}

export function rateLimit(route: keyof typeof RATE_LIMITS): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await enforceRateLimit(c, route);
    await next();
  };
}

/**
 * A tenant's fair share of its hosts: the expensive operations per window, counted per pod and per
 * team (whichever of the team's pods they hit). A pod's cap keeps one busy app from spending its
 * team's whole allowance; the team's keeps a team with many pods from spending a host's. (Commands
 * in progress at once are capped per pod and per team by the HostAgent too.)
 */
export const FAIR_SHARE_LIMITS = {
  exec: { perPod: 120, perTeam: 300, windowMs: 60_000 },
  files: { perPod: 300, perTeam: 600, windowMs: 60_000 },
  reload: { perPod: 10, perTeam: 20, windowMs: 600_000 },
  /** git deploys and rollbacks started through the API (a push webhook's are not counted) */
  deploy: { perPod: 20, perTeam: 60, windowMs: 600_000 },
  /** backups, imports and restores started through the API (scheduled backups are not counted) */
  backup: { perPod: 10, perTeam: 30, windowMs: 3_600_000 },
  /** database service installs (each starts a server and its data on the host) */
  services: { perPod: 10, perTeam: 30, windowMs: 600_000 },
  /** coding agent installs (each fetches a package tree onto the host and copies it into the pod) */
  agents: { perPod: 10, perTeam: 30, windowMs: 600_000 },
  /**
   * changes that render the pod's vhost again and reload the host's shared ingress, which every
   * pod on the host is served through (feedback settings, domain verification and removal, reload)
   */
  ingress: { perPod: 20, perTeam: 60, windowMs: 600_000 },
  /** push webhooks that reach a pod's deploy queue (counted once their signature or secret checked out) */
  push: { perPod: 30, perTeam: 120, windowMs: 600_000 },
} as const;

/**
 * Counts one request on the pod named in the path and on the caller's team (after requireAuth), in
 * one call to the team's limiter object; 429 with Retry-After once either is spent. A request either
 * cap refuses is counted on neither.
 */
export function fairShareLimit(kind: keyof typeof FAIR_SHARE_LIMITS): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await enforceFairShare(c.env, kind, c.get("caller").teamId, c.req.param("name"));
    await next();
  };
}

/** One object per team and kind holds the team's count and its pods' (`podCap`): one round trip for both. */
export const fairShareLimiter = (env: Bindings, kind: keyof typeof FAIR_SHARE_LIMITS, teamId: string) =>
  env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`fair:${kind}:${teamId}`));
/** a pod's count in its team's fair-share object */
export const podCap = (pod: string) => `pod:${pod}`;

/** fairShareLimit's count, for callers that name the pod otherwise than in the path (the MCP tools). */
export async function enforceFairShare(
  env: Bindings,
  kind: keyof typeof FAIR_SHARE_LIMITS,
  teamId: string,
  pod: string | undefined,
): Promise<void> {
  const { perPod, perTeam, windowMs } = FAIR_SHARE_LIMITS[kind];
  const window = `${windowMs / 60_000} minute(s)`;
  // the pod's cap first: a request it refuses is not counted on the team's
  const caps = [
    ...(pod ? [{ key: podCap(pod), limit: perPod, scope: "per pod" }] : []),
    { key: "team", limit: perTeam, scope: "per team" },
  ];
  const decision = await fairShareLimiter(env, kind, teamId).hitEach(
    caps.map(({ key, limit }) => ({ key, limit })),
    windowMs,
  );
  const refused = decision.allowed ? undefined : caps[decision.refused ?? 0];
  if (refused) {
    throw new ApiError(
      "rate_limited",
      `too many ${kind} operations: at most ${refused.limit} per ${window} ${refused.scope}; retry in ${decision.retryAfter} s`,
      {},
      { "Retry-After": String(decision.retryAfter) },
    );
  }
}

/**
 * Password guesses against one account, from however many IPs: the per-IP limit alone lets a botnet
 * try thousands of passwords an hour on one account. The first 10 failures are free (a person's
 * typos, and the per-IP limit, come first); then the account refuses password sign-ins for 1 minute,
 * doubling with each further failure up to 15 minutes, and a success resets the count. The cap is
 * what keeps a victim from being locked out for long by someone who only knows their email: at
 * worst 15 minutes after each failed guess, while sessions, API tokens and the password reset mail
 * keep working. Keyed by the normalized email, whether an account exists or not (the answer must
 * not tell).
 */
export const PASSWORD_BACKOFF: BackoffPolicy = {
  free: 10,
  baseMs: 60_000,
  capMs: 15 * 60_000,
  forgetMs: 24 * 3_600_000,
};

/**
 * Counts a password attempt on `email`'s account (429 with Retry-After while it is locked); call
 * `succeeded` when the password was right, which clears the account's failures.
 */
export async function beginPasswordAttempt(
  c: Context<AppEnv>,
  email: string,
): Promise<{ succeeded(): Promise<void> }> {
  const account = c.env.RATE_LIMITER.get(
    c.env.RATE_LIMITER.idFromName(`login-account:${email.trim().toLowerCase()}`),
  );
  const decision = await account.attempt(PASSWORD_BACKOFF);
  if (!decision.allowed) {
    throw new ApiError(
      "rate_limited",
      `too many failed sign-ins for this account: retry in ${decision.retryAfter} s (or reset the password)`,
      {},
      { "Retry-After": String(decision.retryAfter) },
    );
  }
  return { succeeded: () => account.succeeded() };
}
