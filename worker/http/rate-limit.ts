import type { Context, MiddlewareHandler } from "hono";
import type { BackoffPolicy } from "../durable-objects/rate-limiter";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/** The spec's Limits table: requests per window per client IP. */
export const RATE_LIMITS = {
  login: { limit: 5, windowMs: 60_000 },
  register: { limit: 3, windowMs: 60_000 },
  forgotPassword: { limit: 3, windowMs: 60_000 },
  createPod: { limit: 50, windowMs: 3_600_000 },
  imports: { limit: 20, windowMs: 3_600_000 },
} as const;

/** Cloudflare sets CF-Connecting-IP at the edge and overwrites any value a client sends. */
export const clientIp = (c: { req: { header(name: string): string | undefined } }) =>
  c.req.header("cf-connecting-ip") ?? "unknown";

/** Counts one request against `route`'s limit for the client's IP; 429 with Retry-After once it is spent. */
export async function enforceRateLimit(c: Context<AppEnv>, route: keyof typeof RATE_LIMITS): Promise<void> {
  const { limit, windowMs } = RATE_LIMITS[route];
  const limiter = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(`${route}:${clientIp(c)}`));
  const decision = await limiter.hit(limit, windowMs);
  if (!decision.allowed) {
    throw new ApiError(
      "rate_limited",
      `too many requests: at most ${limit} per ${windowMs / 60_000} minute(s) per IP; retry in ${decision.retryAfter} s`,
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
 * A team's fair share of its hosts: the expensive operations per team and window, whichever of
 * the team's pods they hit (one pod's concurrent commands are capped by its HostAgent too).
 */
export const TEAM_RATE_LIMITS = {
  exec: { limit: 300, windowMs: 60_000 },
  files: { limit: 600, windowMs: 60_000 },
  reload: { limit: 20, windowMs: 600_000 },
} as const;

/** Counts one request against the caller's team (after requireAuth); 429 with Retry-After once spent. */
export function teamRateLimit(kind: keyof typeof TEAM_RATE_LIMITS): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { limit, windowMs } = TEAM_RATE_LIMITS[kind];
    const teamId = c.get("caller").teamId;
    const limiter = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(`${kind}:team:${teamId}`));
    const decision = await limiter.hit(limit, windowMs);
    if (!decision.allowed) {
      throw new ApiError(
        "rate_limited",
        `too many ${kind} operations: at most ${limit} per ${windowMs / 60_000} minute(s) per team; retry in ${decision.retryAfter} s`,
        {},
        { "Retry-After": String(decision.retryAfter) },
      );
    }
    await next();
  };
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
