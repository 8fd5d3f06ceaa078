import type { Context, MiddlewareHandler } from "hono";
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
