import type { MiddlewareHandler } from "hono";
import type { Bindings } from "../env";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";
import { clientIp } from "./rate-limit";

/**
 * `GET /api/repos/branches` and `/api/repos/inspect` make a host run git for anyone signed in, with
 * no pod (and so no pod's fair share) behind them: each may fetch up to the host's fetch cap onto
 * its disk. So they are counted per client IP and per account (requests per window), and an account
 * has at most `atOnce` of them in progress at a time, whichever hosts they land on (a lease in the
 * RateLimiter object of the account, given back when the request ends and lapsing after `leaseMs`
 * if it never is). A host caps its own lookups in progress too (agent/git/lookups.ts). All refusals
 * are 429 with Retry-After. Goes after requireAuth.
 */
export const REPO_LOOKUP_LIMITS = {
  perIp: 60,
  perAccount: 60,
  windowMs: 600_000,
  /** lookups one account may have in progress at once */
  atOnce: 3,
  /** the longest a lookup can take (two hosts' timeouts, worker/services/git/repos.ts) and a margin */
  leaseMs: 150_000,
} as const;

async function hit(env: Bindings, key: string, limit: number, scope: string) {
  const { windowMs } = REPO_LOOKUP_LIMITS;
  const decision = await env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(key)).hit(limit, windowMs);
  if (!decision.allowed)
    throw new ApiError(
      "rate_limited",
      `too many repository lookups: at most ${limit} per ${windowMs / 60_000} minutes per ${scope}; retry in ${decision.retryAfter} s`,
      {},
      { "Retry-After": String(decision.retryAfter) },
    );
}

export const repoLookupLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { perIp, perAccount, atOnce, leaseMs } = REPO_LOOKUP_LIMITS;
  const userId = c.get("caller").user.id;
  await hit(c.env, `repo-lookups:ip:${clientIp(c)}`, perIp, "IP");
  await hit(c.env, `repo-lookups:user:${userId}`, perAccount, "account");
  const slots = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(`repo-lookups-at-once:user:${userId}`));
  const place = await slots.enter(atOnce, leaseMs);
  if (!("lease" in place))
    throw new ApiError(
      "rate_limited",
      `too many repository lookups in progress: at most ${atOnce} at once per account; retry in ${place.retryAfter} s`,
      {},
      { "Retry-After": String(place.retryAfter) },
    );
  try {
    await next();
  } finally {
    await slots.leave(place.lease);
  }
};
