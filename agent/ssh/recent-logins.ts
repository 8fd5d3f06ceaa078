/** pairs remembered at most; past this the least recently seen are forgotten first */
const MAX_TRACKED = 4_096;

/**
 * Which address logged in to which pod lately. The gateway checks a pod's keys when a connection
 * from such an address arrives, beside the key exchange, instead of after it (./gateway.ts): a login
 * then waits for the slower of the two rather than both in turn (scp, rsync and git over SSH open a
 * connection per command). A stranger's connection starts nothing before it tries a key, as before:
 * only an address that proved a key to this pod within `ttlMs` does. Bounded in memory.
 */
export class RecentLogins {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
    private readonly max = MAX_TRACKED,
  ) {}

  /** `ip` logged in to `pod` just now */
  add(pod: string, ip: string): void {
    const key = `${pod}\n${ip}`;
    this.seen.delete(key); // re-inserted last: the map's order is least recently seen first
    this.seen.set(key, this.now());
    while (this.seen.size > this.max) {
      const oldest = this.seen.keys().next().value;
      if (oldest === undefined) break;
      this.seen.delete(oldest);
    }
  }

  /** whether `ip` logged in to `pod` within the last `ttlMs` */
  has(pod: string, ip: string): boolean {
    const at = this.seen.get(`${pod}\n${ip}`);
    return at !== undefined && this.now() - at < this.ttlMs;
  }

  /** the pod is gone: forget its logins */
  forget(pod: string): void {
    for (const key of this.seen.keys()) if (key.startsWith(`${pod}\n`)) this.seen.delete(key);
  }
}
