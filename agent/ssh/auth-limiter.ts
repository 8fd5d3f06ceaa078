import { rateLimitAddress } from "../../shared/net/addresses";

export interface AuthLimitOptions {
  /** failed logins from one address within `windowMs` that get it blocked */
  maxFailures: number;
  windowMs: number;
  /** how long a blocked address is refused */
  blockMs: number;
}

export const DEFAULT_AUTH_LIMIT: AuthLimitOptions = {
  maxFailures: 10,
  windowMs: 5 * 60_000,
  blockMs: 15 * 60_000,
};

/** addresses remembered at most; past this the oldest records are forgotten first */
const MAX_TRACKED = 10_000;

interface AddressRecord {
  failures: number[];
  blockedUntil: number;
}

/**
 * Failed SSH logins per source address. A failed login is a connection whose credentials were
 * refused, counted at its first refusal (a client trying its keys one after another fails once, not
 * once per key) and forgiven if a later key of the same connection gets in (OpenSSH offers every
 * key it has in turn). Enough of them within the window and the address is blocked for a while:
 * its new connections are dropped before the handshake, its connections still trying are ended.
 * An IPv6 address is counted with the rest of its /64 (rateLimitAddress): one attacker's network,
 * not 2^64 fresh budgets, nor 10,000 of them crowding everyone else's records out.
 */
export class AuthFailureLimiter {
  private readonly records = new Map<string, AddressRecord>();

  constructor(
    private readonly opts: AuthLimitOptions = DEFAULT_AUTH_LIMIT,
    private readonly now: () => number = Date.now,
  ) {}

  blocked(ip: string): boolean {
    const r = this.records.get(rateLimitAddress(ip));
    return r !== undefined && r.blockedUntil > this.now();
  }

  /** Record a failure; true when this one got the address blocked. */
  fail(address: string): boolean {
    const ip = rateLimitAddress(address);
    const now = this.now();
    const r = this.records.get(ip) ?? { failures: [], blockedUntil: 0 };
    this.records.delete(ip); // re-inserted last: the map's order is then least recently failed first
    r.failures = r.failures.filter((t) => t > now - this.opts.windowMs);
    r.failures.push(now);
    let blockedNow = false;
    if (r.failures.length >= this.opts.maxFailures && r.blockedUntil <= now) {
      r.blockedUntil = now + this.opts.blockMs;
      r.failures = [];
      blockedNow = true;
    }
    this.records.set(ip, r);
    while (this.records.size > MAX_TRACKED) {
      const oldest = this.records.keys().next().value;
      if (oldest === undefined) break;
      this.records.delete(oldest);
    }
    return blockedNow;
  }

  /** Take back the latest failure (the connection that failed first got in after all). */
  forgive(ip: string): void {
    const r = this.records.get(rateLimitAddress(ip));
    r?.failures.pop();
  }
}
