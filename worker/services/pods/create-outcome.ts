import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../../db/client";
import { pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { alertOnPodStatus } from "../alerts/host-reports";
import { recordEventStatement } from "./events";

/**
 * The end of a creation that did not make it: the pod leaves `creating` for `error`, with the reason
 * in an `error` event, and its team's `pod_error` alert. Only a pod still `creating` moves (a delete
 * meanwhile wins), so a retried call alerts once.
 */
export async function markCreateFailed(env: Bindings, db: Db, podId: string, reason: string) {
  const [moved] = await db.batch([
    db
      .update(pods)
      .set({ status: "error", updatedAt: nowIso() })
      .where(and(eq(pods.id, podId), eq(pods.status, "creating")))
      .returning({ id: pods.id }),
    recordEventStatement(db, podId, "error", `creating the pod failed: ${reason}`),
  ]);
  if (moved.length > 0)
    await alertOnPodStatus(env, db, [
      { podId, status: "error", reason: `creating the pod failed: ${reason}` },
    ]);
}

/**
 * Past this, a creation has outlived every bound of its workflow (the host's timeout, the wait for
 * an answer, the host's return window, a reload): whatever still holds it `creating` is broken.
 */
export const CREATION_DEADLINE_MS = 2 * 60 * 60_000;
const PAGE = 100;
const MAX_PAGES = 10;

/**
 * The safety net behind "never a pod left creating" (cron): a pod still `creating` past the deadline
 * ends `error` with the reason, and a workflow instance still holding it is terminated. Pages through
 * the few such pods; never loads the fleet.
 */
export async function failStuckCreations(env: Bindings, db: Db, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - CREATION_DEADLINE_MS).toISOString();
  let failed = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const stuck = await db
      .select({ id: pods.id })
      .from(pods)
      .where(and(eq(pods.status, "creating"), lt(pods.updatedAt, cutoff)))
      .limit(PAGE);
    for (const { id } of stuck) {
      const instance = await env.POD_CREATE.get(id).catch(() => undefined);
      const status = await instance?.status().catch(() => undefined);
      if (instance && status && ["queued", "running", "waiting", "paused"].includes(status.status)) {
        await instance.terminate().catch(() => undefined);
      }
      await markCreateFailed(
        env,
        db,
        id,
        `it did not finish within ${CREATION_DEADLINE_MS / 3_600_000} hours`,
      );
      failed++;
    }
    if (stuck.length < PAGE) break;
  }
  return failed;
}
