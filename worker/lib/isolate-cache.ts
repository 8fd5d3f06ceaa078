/**
 * Short-lived, isolate-local read caches for the hottest authenticated reads (who is calling, which
 * teams they are in), so such a read costs no D1 round trip. Every successful change request clears
 * all of them in the isolate that served it (see `requestContext`); other isolates of the Worker may
 * answer from an older entry for at most the TTL. That bounded window is the price, documented in
 * the README.
 */
const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

const all = new Set<Map<string, unknown>>();

export interface IsolateCache<T> {
  get(key: string): T | undefined;
  set(key: string, value: T): void;
  delete(key: string): void;
  clear(): void;
}

/** `ttlMs`: longer than the default only for a cache that also hears of changes some other way (the edge's routes). */
export function createIsolateCache<T>(options: { ttlMs?: number } = {}): IsolateCache<T> {
  const ttlMs = options.ttlMs ?? TTL_MS;
  const entries = new Map<string, { value: T; until: number }>();
  all.add(entries);
  return {
    get(key) {
      const hit = entries.get(key);
      if (!hit) return undefined;
      if (hit.until < Date.now()) {
        entries.delete(key);
        return undefined;
      }
      return hit.value;
    },
    set(key, value) {
      if (entries.size >= MAX_ENTRIES) entries.clear();
      entries.set(key, { value, until: Date.now() + ttlMs });
    },
    delete(key) {
      entries.delete(key);
    },
    clear() {
      entries.clear();
    },
  };
}

/** Drop every cached read of this isolate: called after any change to who may do what. */
export function forgetCachedReads(): void {
  for (const entries of all) entries.clear();
}
