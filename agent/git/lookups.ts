import { AgentError } from "../errors";

/**
 * Repository lookups (`repo.branches`, `repo.inspect`) in progress on this host at once: they run
 * for any signed-in account, with no pod behind them, so past `max` the next one is refused at once
 * (429; the Worker asks another host) rather than queued behind the others. The Worker caps them per
 * account as well (worker/http/repo-lookup-limit.ts).
 */
export class GitLookups {
  private running = 0;

  constructor(readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max)
      throw new AgentError(
        "rate_limited",
        `this host already has ${this.running} repository lookups in progress; retry in a few seconds`,
      );
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
    }
  }
}
