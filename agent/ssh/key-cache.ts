import { type AuthorizedKey, parseAuthorizedKeys } from "./authorized-keys";
import type { KeyFileCheck } from "./key-file";

/**
 * One copy of each pod's authorized keys for the whole gateway, so that a flood of logins (500
 * random keys a minute against a host's pods) costs a bounded number of processes in the pods
 * rather than one `docker exec` per attempt.
 *
 * A copy is trusted for `freshMs` after the check that produced it began; after that the next
 * login checks the file's identity (device, inode, size, mtime and ctime in ns, one process in the
 * pod: key-file.ts's readKeyFileIfChanged) and reads it only if that changed. Logins arriving while
 * a check runs share it, and at most `maxLoads` checks run at once across all pods — so the work
 * is at most one check per pod per `freshMs`, however many attempts come. A key the user adds or
 * removes through an SSH session counts at once (the gateway calls `stale` on the session's input
 * and when its process ends), through the Files API or exec within `freshMs`; the agent's own key
 * changes invalidate the copy at once (`invalidate`). A file rewritten within the same clock tick with the
 * same size and a recycled inode would keep its identity: every `fullReadMs` the file is read
 * whatever its identity says.
 */

export type LoadKeyFile = (pod: string, known: string | null) => Promise<KeyFileCheck>;

export interface PodKeySetsOptions {
  load: LoadKeyFile;
  /** checks running at once, all pods together */
  maxLoads: number;
  freshMs: number;
  fullReadMs: number;
  now?: () => number;
}

interface KeySet {
  identity: string | null;
  keys: AuthorizedKey[];
  checkedAt: number;
  readAt: number;
  /** bumped by `stale`: a check begun before it does not make the copy fresh */
  generation: number;
  pending?: Promise<AuthorizedKey[]>;
}

export class PodKeySets {
  private readonly sets = new Map<string, KeySet>();
  private readonly slots: Slots;
  private readonly now: () => number;
  /** checks started, for tests and metrics */
  loads = 0;

  constructor(private readonly opts: PodKeySetsOptions) {
    this.slots = new Slots(opts.maxLoads);
    this.now = opts.now ?? Date.now;
  }

  keys(pod: string): Promise<AuthorizedKey[]> {
    let set = this.sets.get(pod);
    if (!set) {
      set = { identity: null, keys: [], checkedAt: Number.NEGATIVE_INFINITY, readAt: 0, generation: 0 };
      this.sets.set(pod, set);
    }
    if (this.now() - set.checkedAt < this.opts.freshMs) return Promise.resolve(set.keys);
    if (set.pending) return set.pending;
    const s = set;
    const pending = this.slots.run(() => this.check(pod, s));
    s.pending = pending;
    const clear = () => {
      if (s.pending === pending) s.pending = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  private async check(pod: string, set: KeySet): Promise<AuthorizedKey[]> {
    const started = this.now();
    const generation = set.generation;
    const full = set.identity === null || started - set.readAt >= this.opts.fullReadMs;
    this.loads++;
    const r = await this.opts.load(pod, full ? null : set.identity);
    // Invalidated or forgotten meanwhile: the answer serves the logins that waited for it, no later one.
    if (this.sets.get(pod) !== set) return r.changed ? parse(r) : set.keys;
    if (r.changed) {
      set.identity = r.identity;
      set.keys = parse(r);
      set.readAt = started;
    }
    if (set.generation === generation) set.checkedAt = started;
    return set.keys;
  }

  /** The file may have changed (a session in the pod): the next login checks its identity. */
  stale(pod: string): void {
    const set = this.sets.get(pod);
    if (set) {
      set.checkedAt = Number.NEGATIVE_INFINITY;
      set.generation++;
      set.pending = undefined;
    }
  }

  /** The file changed through the agent: the next login reads it whole. */
  invalidate(pod: string): void {
    this.sets.delete(pod);
  }

  forget(pod: string): void {
    this.sets.delete(pod);
  }
}

const parse = (r: Extract<KeyFileCheck, { changed: true }>) => parseAuthorizedKeys(r.file.text);

/** At most `max` of the functions given to `run` at once; the others wait their turn in order. */
export class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((r) => this.waiting.push(r));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
