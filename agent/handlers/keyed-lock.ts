import { AgentError } from "../errors";

/**
 * One command at a time per pod. The HostAgent DO serialises a host's commands, but a retry after a
 * reconnect can overlap the original, and the events watcher renders vhosts too.
 *
 * A holder may also say that some callers should not wait for it (`hold`): a backup or restore of a
 * stopped pod runs for minutes in helper containers on the pod's volumes, and a start meanwhile
 * would wait past its caller's 30 s and then start the pod behind the user's back; `runOrRefuse`
 * refuses such a caller at once (409) with the holder's words.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly notes = new Map<string, string>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** `run` when nothing holds or awaits the key; else null at once (the caller never waits). */
  tryRun<T>(key: string, fn: () => Promise<T>): Promise<T> | null {
    return this.tails.has(key) ? null : this.run(key, fn);
  }

  /** `run`, unless the key's holder left a note (`hold`): then `conflict` at once, with the note. */
  runOrRefuse<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const note = this.notes.get(key);
    if (note !== undefined) return Promise.reject(new AgentError("conflict", note));
    return this.run(key, fn);
  }

  /** Called by the key's holder (inside `run`): the note `runOrRefuse` answers with, until released. */
  hold(key: string, note: string): () => void {
    this.notes.set(key, note);
    return () => {
      if (this.notes.get(key) === note) this.notes.delete(key);
    };
  }
}
