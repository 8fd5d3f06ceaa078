import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "./events";

/**
 * The end of a creation that did not make it: the pod leaves `creating` for `error`, with the reason
 * in an `error` event. Only a pod still `creating` moves (a delete meanwhile wins).
 */
export const markCreateFailed = (db: Db, podId: string, reason: string) =>
  db.batch([
    db
      .update(pods)
      .set({ status: "error", updatedAt: nowIso() })
      .where(and(eq(pods.id, podId), eq(pods.status, "creating"))),
    recordEventStatement(db, podId, "error", `creating the pod failed: ${reason}`),
  ]);
