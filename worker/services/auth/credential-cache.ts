import type { Caller } from "./caller";

/**
 * A short-lived, isolate-local cache of resolved credentials: an authenticated read then costs no
 * D1 round trip at all (the API benchmark's target). Every change that can revoke or alter a
 * credential (logout, token revocation, password reset, team switch, membership or team removal,
 * email verification) clears it in the isolate that made the change; other isolates of the same
 * Worker may honour the old answer for at most TTL_MS. That bounded window is the price, and it is
 * documented in the README.
 */
const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

const entries = new Map<string, { caller: Caller; until: number }>();

export function cachedCaller(tokenHash: string): Caller | undefined {
  const hit = entries.get(tokenHash);
  if (!hit) return undefined;
  if (hit.until < Date.now()) {
    entries.delete(tokenHash);
    return undefined;
  }
  return hit.caller;
}

export function rememberCaller(tokenHash: string, caller: Caller): void {
  if (entries.size >= MAX_ENTRIES) entries.clear();
  entries.set(tokenHash, { caller, until: Date.now() + TTL_MS });
}

/** Forget every cached credential of this isolate: called after any change to who may do what. */
export function forgetCallers(): void {
  entries.clear();
}
