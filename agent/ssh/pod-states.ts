/**
 * Whether each pod's container runs, as the gateway needs it before a login costs anything: a
 * stopped pod's logins are refused without a call to the engine. The agent's events watcher
 * (../docker/events.ts) and the gateway's own start (`restore`) tell it at once; what nobody told it
 * within `ttlMs` is asked of the engine again (one inspect per pod however many logins wait for it),
 * so a missed event costs at most `ttlMs` of wrong answers.
 */
export class PodStates {
  private readonly states = new Map<string, { running: boolean; at: number }>();
  private readonly asking = new Map<string, Promise<boolean>>();
  /** inspects made, for tests and metrics */
  inspects = 0;

  constructor(
    /** true when the pod's container runs (false when it is stopped or gone) */
    private readonly inspect: (pod: string) => Promise<boolean>,
    private readonly ttlMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {}

  set(pod: string, running: boolean): void {
    this.states.set(pod, { running, at: this.now() });
    this.asking.delete(pod);
  }

  forget(pod: string): void {
    this.states.delete(pod);
    this.asking.delete(pod);
  }

  running(pod: string): Promise<boolean> {
    const known = this.states.get(pod);
    if (known && this.now() - known.at < this.ttlMs) return Promise.resolve(known.running);
    let asking = this.asking.get(pod);
    if (!asking) {
      this.inspects++;
      const started = this.now();
      asking = this.inspect(pod).then((running) => {
        // told otherwise meanwhile (an event): that is newer than this answer
        const told = this.states.get(pod);
        if (!told || told.at <= started) this.states.set(pod, { running, at: started });
        return running;
      });
      const ask = asking;
      const clear = () => {
        if (this.asking.get(pod) === ask) this.asking.delete(pod);
      };
      ask.then(clear, clear);
      this.asking.set(pod, ask);
    }
    return asking;
  }
}
