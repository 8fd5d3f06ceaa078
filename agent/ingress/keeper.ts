import type { Logger } from "../logger";
import type { Ingress } from "./nginx";

/**
 * Keeps the host's ingress up and says whether the host can serve. A host whose nginx cannot start
 * (another server holds its port, a broken config) must not take pods that nobody could reach: the
 * keeper reports the problem (the agent's hello, then `agent:host-health` on every change) and tries
 * again every interval, so the host takes pods again once the port is free. A master that dies later
 * is noticed and restarted the same way.
 */
export class IngressKeeper {
  private current: string | null = "the ingress has not started yet";
  private timer: ReturnType<typeof setInterval> | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly ingress: Ingress,
    private readonly opts: { intervalMs: number; log: Logger; onChange: (problem: string | null) => void },
  ) {}

  /** null when the host can serve, else why not */
  get problem(): string | null {
    return this.current;
  }

  /** The first attempt (awaited, so the hello tells the truth), then a check every interval. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): Promise<void> {
    this.checking ??= this.attempt().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async attempt(): Promise<void> {
    if (this.current === null && (await this.ingress.masterPid())) return;
    try {
      await this.ingress.start();
      this.set(null);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (this.current !== `ingress failed to start: ${message}`)
        this.opts.log.error("ingress failed to start", { error: message });
      this.set(`ingress failed to start: ${message}`);
    }
  }

  private set(problem: string | null) {
    if (problem === this.current) return;
    if (problem === null) this.opts.log.info("ingress is up; the host takes pods");
    this.current = problem;
    this.opts.onChange(problem);
  }
}
