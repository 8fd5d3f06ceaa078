import { DurableObject } from "cloudflare:workers";

export interface RateDecision {
  allowed: boolean;
  /** seconds until the next request would be allowed (0 when allowed) */
  retryAfter: number;
  remaining: number;
}

/**
 * A sliding-log limiter, one object per (route, client IP). A Durable Object runs one event at a time,
 * so concurrent requests from a burst are counted one after another: no lost updates, never more than
 * `limit` through in any window. The log is kept in memory and mirrored to storage so an evicted
 * object comes back with its count; an alarm clears storage once the window has passed.
 */
export class RateLimiter extends DurableObject {
  private hits: number[] | undefined;

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

  override async alarm(): Promise<void> {
    this.hits = undefined;
    await this.ctx.storage.deleteAll();
  }
}
