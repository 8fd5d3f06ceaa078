import { DurableObject } from "cloudflare:workers";

export interface RateDecision {
  allowed: boolean;
  /** seconds until the next request would be allowed (0 when allowed) */
  retryAfter: number;
  remaining: number;
}

export interface BackoffPolicy {
  /** failures before the first lockout */
  free: number;
  baseMs: number;
  capMs: number;
  forgetMs: number;
}

interface BackoffState {
  failures: number;
  lockedUntil: number;
}

/**
 * A sliding-log limiter, one object per (route, client IP). A Durable Object runs one event at a time,
 * so concurrent requests from a burst are counted one after another: no lost updates, never more than
 * `limit` through in any window (`hit`). The same class keeps per-account failure backoff
 * (`attempt`), in objects of other names. The log is kept in memory and mirrored to storage so an evicted
 * object comes back with its count; an alarm clears storage once the window has passed.
 */
export class RateLimiter extends DurableObject {
  private hits: number[] | undefined;
  /** `hitEach`'s logs by key */
  private logs: Record<string, number[]> | undefined;

  async hit(limit: number, windowMs: number): Promise<RateDecision> {
    const now = Date.now();
    this.hits ??= (await this.ctx.storage.get<number[]>("hits")) ?? [];
    const recent = this.hits.filter((t) => t > now - windowMs);
    if (recent.length >= limit) {
      this.hits = recent;
      const oldest = recent[0] ?? now;
      return {
        allowed: false,
        retryAfter: Math.max(1, Math.ceil((oldest + windowMs - now) / 1000)),
        remaining: 0,
      };
    }
    recent.push(now);
    this.hits = recent;
    await this.ctx.storage.put("hits", recent);
    await this.ctx.storage.setAlarm(now + windowMs);
    return { allowed: true, retryAfter: 0, remaining: limit - recent.length };
  }

  /**
   * Several sliding logs of one window in one object, checked and counted in one call: a team's fair
   * share (its own count and each of its pods', `enforceFairShare`) costs one round trip instead of
   * one per cap. The caps are checked in order; the first one spent refuses (`refused`: its index)
   * and nothing is counted; otherwise every one counts the request.
   */
  async hitEach(
    caps: { key: string; limit: number }[],
    windowMs: number,
  ): Promise<RateDecision & { refused?: number }> {
    const now = Date.now();
    this.logs ??= (await this.ctx.storage.get<Record<string, number[]>>("logs")) ?? {};
    const logs = this.logs;
    const recent = caps.map(({ key }) => (logs[key] ?? []).filter((t) => t > now - windowMs));
    for (const [i, { limit }] of caps.entries()) {
      const log = recent[i] ?? [];
      if (log.length < limit) continue;
      const oldest = log[0] ?? now;
      return {
        allowed: false,
        refused: i,
        retryAfter: Math.max(1, Math.ceil((oldest + windowMs - now) / 1000)),
        remaining: 0,
      };
    }
    // keys whose window has passed go (a busy team's object is never wiped by its alarm)
    for (const [key, log] of Object.entries(logs)) if ((log.at(-1) ?? 0) <= now - windowMs) delete logs[key];
    let remaining = Number.POSITIVE_INFINITY;
    for (const [i, { key, limit }] of caps.entries()) {
      const log = [...(recent[i] ?? []), now];
      logs[key] = log;
      remaining = Math.min(remaining, limit - log.length);
    }
    await this.ctx.storage.put("logs", logs);
    await this.ctx.storage.setAlarm(now + windowMs);
    return { allowed: true, retryAfter: 0, remaining: Number.isFinite(remaining) ? remaining : 0 };
  }

  /**
   * Failures with backoff, one object per account (`PASSWORD_BACKOFF`): each attempt is counted as a
   * failure when it starts, so a concurrent burst cannot slip past the count, and `succeeded` wipes
   * the count. From the `free`-th failure on, the account is locked for `baseMs`, doubling with each
   * further failure up to `capMs`; a locked attempt is refused without being counted. The count is
   * forgotten `forgetMs` after the last failure.
   */
  async attempt(policy: BackoffPolicy): Promise<RateDecision> {
    const now = Date.now();
    const state = (await this.ctx.storage.get<BackoffState>("backoff")) ?? { failures: 0, lockedUntil: 0 };
    if (now < state.lockedUntil) {
      return { allowed: false, retryAfter: Math.ceil((state.lockedUntil - now) / 1000), remaining: 0 };
    }
    state.failures += 1;
    if (state.failures >= policy.free) {
      const doublings = Math.min(state.failures - policy.free, 30);
      state.lockedUntil = now + Math.min(policy.capMs, policy.baseMs * 2 ** doublings);
    }
    await this.ctx.storage.put("backoff", state);
    await this.ctx.storage.setAlarm(now + policy.forgetMs);
    return { allowed: true, retryAfter: 0, remaining: Math.max(0, policy.free - state.failures) };
  }

  /**
   * A place among at most `max` held at once (the caller's operations in progress), one object per
   * subject: `leave` gives it back. A place not given back (a Worker that died mid-request) lapses
   * after `leaseMs`, so a count never outlives the calls it counts by more than that. Refused:
   * retry in a second. Leases are kept in storage: the object may be evicted between calls.
   */
  async enter(max: number, leaseMs: number): Promise<{ lease: string } | { retryAfter: number }> {
    const now = Date.now();
    const leases = (await this.ctx.storage.get<Record<string, number>>("leases")) ?? {};
    for (const [id, until] of Object.entries(leases)) if (until <= now) delete leases[id];
    if (Object.keys(leases).length >= max) return { retryAfter: 1 };
    const lease = crypto.randomUUID();
    leases[lease] = now + leaseMs;
    await this.ctx.storage.put("leases", leases);
    // every lease has lapsed by then: the alarm's wipe takes nothing still held
    await this.ctx.storage.setAlarm(Math.max(...Object.values(leases)));
    return { lease };
  }

  async leave(lease: string): Promise<void> {
    const leases = (await this.ctx.storage.get<Record<string, number>>("leases")) ?? {};
    if (!Object.hasOwn(leases, lease)) return;
    delete leases[lease];
    await this.ctx.storage.put("leases", leases);
  }

  async succeeded(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }

  override async alarm(): Promise<void> {
    this.hits = undefined;
    this.logs = undefined;
    await this.ctx.storage.deleteAll();
  }
}
