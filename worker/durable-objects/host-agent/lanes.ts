/**
 * Work run one at a time per lane, in the order it was given. A Durable Object delivers an agent's
 * messages in order but runs their handlers side by side while they await D1 (D1 is no storage
 * operation, so the input gate stays open): two health reports a moment apart could be applied in
 * reverse, leaving the older one stored. A report's handler runs in its kind's lane instead.
 */
export class Lanes {
  private readonly tails = new Map<string, Promise<void>>();

  run(lane: string, work: () => Promise<void>): Promise<void> {
    const done = (this.tails.get(lane) ?? Promise.resolve()).then(work);
    // a failed report does not hold up the next one (its own caller hears the failure)
    const tail = done.catch(() => undefined);
    this.tails.set(lane, tail);
    void tail.then(() => {
      if (this.tails.get(lane) === tail) this.tails.delete(lane);
    });
    return done;
  }
}
