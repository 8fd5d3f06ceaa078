import type { WorkflowStep } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { createDb } from "../../db/client";
import { podMoves, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { recordEventStatement } from "../../services/pods/events";
import { podBusyWith } from "../../services/pods/moving";

/** how often, and how long, an evacuation looks again at a pod that is busy */
const CHECK_EVERY_MS = 15_000;
/** a deploy may run 20 minutes, a restore or an install about as long: then the move gives up */
const MAX_CHECKS = 160;

/**
 * Before an evacuation reads the pod, what the pod is still doing on its old host ends: a deploy, a
 * restore, a service or coding agent install (../../services/pods/moving.ts `podBusyWith`). Copied
 * halfway, its release record, dump or sidecar would be missing on the new host. Nothing new starts
 * meanwhile: the move is `moving`, so the verbs refuse and a queued deploy waits for its turn.
 * A lost host's pod is not waited for: its host is gone, and with it what ran there.
 *
 * Returns why the move gives up, or null to go on.
 */
export async function waitForPodOperations(
  step: WorkflowStep,
  env: Bindings,
  moveId: string,
): Promise<string | null> {
  const db = () => createDb(env.DB);
  for (let i = 1; i <= MAX_CHECKS; i++) {
    const busy = await step.do(`what the pod is still doing #${i}`, async () => {
      const [row] = await db()
        .select({ kind: podMoves.kind, podId: podMoves.podId, name: pods.name })
        .from(podMoves)
        .innerJoin(pods, eq(pods.id, podMoves.podId))
        .where(eq(podMoves.id, moveId));
      if (!row || row.kind === "lost") return null;
      const what = await podBusyWith(db(), row.podId);
      if (what && i === 1)
        await recordEventStatement(
          db(),
          row.podId,
          "progress",
          `the move to another server waits for ${what} on pod ${row.name} to end`,
        );
      return what ? { what, name: row.name } : null;
    });
    if (!busy) return null;
    if (i === MAX_CHECKS)
      return `${busy.what} on pod ${busy.name} did not end within ${Math.round((MAX_CHECKS * CHECK_EVERY_MS) / 60_000)} minutes; the pod stays on its host`;
    await step.sleep(`wait for the pod's ${busy.what} #${i}`, CHECK_EVERY_MS);
  }
  return null;
}
