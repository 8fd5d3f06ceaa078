import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../../db/client";
import { podCodingAgents } from "../../db/schema";
import type { Bindings } from "../../env";
import { recordInstallFailed } from "./outcome";

/** Past this, an install has outlived every bound of its workflow: whatever holds it is broken. */
export const INSTALL_DEADLINE_MS = 2 * 60 * 60_000;
const PAGE = 100;

/**
 * The safety net behind "every install ends" (cron): an install still `installing` past the
 * deadline ends `error`, and its workflow instance, if still alive, is terminated. Reads only the
 * few such rows.
 */
export async function failStuckAgentInstalls(env: Bindings, db: Db, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - INSTALL_DEADLINE_MS).toISOString();
  const stuck = await db
    .select({ id: podCodingAgents.id })
    .from(podCodingAgents)
    .where(and(eq(podCodingAgents.status, "installing"), lt(podCodingAgents.updatedAt, cutoff)))
    .limit(PAGE);
  for (const { id } of stuck) {
    const instance = await env.POD_CODING_AGENT.get(id).catch(() => undefined);
    const status = await instance?.status().catch(() => undefined);
    if (instance && status && ["queued", "running", "waiting", "paused"].includes(status.status))
      await instance.terminate().catch(() => undefined);
    await recordInstallFailed(db, id, `it did not finish within ${INSTALL_DEADLINE_MS / 3_600_000} hours`);
  }
  return stuck.length;
}
