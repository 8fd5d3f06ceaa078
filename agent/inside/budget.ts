/**
 * Results travel as one WebSocket frame and are journaled by the HostAgent Durable Object in one
 * SQLite value (at most 2 MB on Cloudflare), as JSON. Raw byte caps are not enough: a NUL or other
 * control byte becomes six bytes of JSON (`\u0000`). These helpers keep what a result carries
 * within a budget of encoded bytes.
 */

/** what one op's text payload may take as JSON, leaving room for the envelope */
export const RESULT_BUDGET_BYTES = 1_500_000;

export const encodedSize = (s: string) => Buffer.byteLength(JSON.stringify(s));

/** The longest head of `s` whose JSON encoding fits `budget` bytes. */
export function headWithin(s: string, budget: number): string {
  if (encodedSize(s) <= budget) return s;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (encodedSize(s.slice(0, mid)) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return s.slice(0, lo);
}

/**
 * Share the budget between two streams: a small one keeps everything and the other gets the rest;
 * two large ones get half each. Returns the kept heads.
 */
export function fitPair(a: string, b: string, budget = RESULT_BUDGET_BYTES): [string, string] {
  const sa = encodedSize(a);
  const sb = encodedSize(b);
  if (sa + sb <= budget) return [a, b];
  const half = Math.floor(budget / 2);
  if (sa <= half) return [a, headWithin(b, budget - sa)];
  if (sb <= half) return [headWithin(a, budget - sb), b];
  return [headWithin(a, half), headWithin(b, half)];
}
