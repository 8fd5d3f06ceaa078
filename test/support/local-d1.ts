import { openLocalD1 } from "../../bench/support/worker";

/**
 * A test's own look-ups and seed rows in a local D1 persist directory (one made by
 * `migratedPersistDir`), straight through a Miniflare of its own: about a second less per call
 * than a `wrangler d1 execute` run. What an operator command does still goes through wrangler;
 * never call these while something else has the directory open.
 */
export async function queryLocalD1<T = Record<string, unknown>>(
  persistDir: string,
  sql: string,
): Promise<T[]> {
  const { d1, dispose } = await openLocalD1(persistDir);
  try {
    return (await d1.prepare(sql).all<T>()).results;
  } finally {
    await dispose();
  }
}

/** Runs the statements in one batch (one transaction). */
export async function execLocalD1(persistDir: string, statements: string[]): Promise<void> {
  const { d1, dispose } = await openLocalD1(persistDir);
  try {
    await d1.batch(statements.map((s) => d1.prepare(s)));
  } finally {
    await dispose();
  }
}
