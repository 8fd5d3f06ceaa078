import { and, eq, ne } from "drizzle-orm";
import type { MetricSample } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { podMetrics, pods } from "../../db/schema";
import { MINUTE } from "../../lib/time";

/** D1 binds at most 100 parameters per statement: 7 per row. */
const ROWS_PER_INSERT = 14;
/** a host clock this far behind (or any amount ahead) is not trusted with the timestamp */
const MAX_SAMPLE_AGE_MS = 10 * MINUTE;

/**
 * One tick of a host's samples into D1. Only pods placed on that host are written (an agent can
 * never write another host's pods, nor invent pods), and a sample's time is the host's, clamped to
 * the last ten minutes of the control plane's clock.
 */
export async function recordMetrics(
  db: Db,
  hostId: string,
  samples: readonly MetricSample[],
  now = Date.now(),
): Promise<number> {
  if (samples.length === 0) return 0;
  const own = await db
    .select({ id: pods.id, name: pods.name })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), ne(pods.status, "deleted")));
  const idOf = new Map(own.map((p) => [p.name, p.id]));
  const rows = samples.flatMap((s) => {
    const podId = idOf.get(s.name);
    if (!podId) return [];
    const at = Math.min(now, Math.max(now - MAX_SAMPLE_AGE_MS, s.at));
    return [
      {
        podId,
        recordedAt: new Date(at).toISOString(),
        cpuUsage: s.cpu,
        memoryUsage: s.memory,
        storageUsed: s.storage,
        networkIn: s.netIn,
        networkOut: s.netOut,
      },
    ];
  });
  const statements = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    statements.push(
      db
        .insert(podMetrics)
        .values(rows.slice(i, i + ROWS_PER_INSERT))
        .onConflictDoNothing(),
    );
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  return rows.length;
}
