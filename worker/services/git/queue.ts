import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type DeploymentRow, type DeploymentTrigger, deployments, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "../pods/events";
import { podMoving } from "../pods/moving";

/**
 * The order of a pod's deploys. One runs at a time (a partial unique index allows one `running`
 * row per pod); a trigger while one runs waits `queued`, and a newer trigger supersedes the queued
 * one: it ends `failed`, "superseded by dep_…", with its `deploy_failed` event (every failed
 * deployment has one). So after a burst of pushes exactly the newest runs next.
 *
 * Each deployment is a pod-deploy workflow instance (id = the deployment's id) that takes its turn
 * with `claimTurn`; the one ending hands over with `nextQueued` and wakes it with a `deploy-turn`
 * event. A lost wake-up costs only time: a waiting instance checks again every few minutes.
 */

/** The event a queued deployment's instance waits for. */
export const TURN_EVENT = "deploy-turn";

export interface NewDeployment {
  trigger: DeploymentTrigger;
  commitSha?: string | null;
  commitMessage?: string | null;
  rollbackOf?: string | null;
  release?: string | null;
}

/**
 * A new deployment of the pod, queued, and its workflow started; a deployment already queued is
 * superseded by it. Returns the row.
 */
export async function enqueueDeployment(
  env: Bindings,
  db: Db,
  podId: string,
  input: NewDeployment,
): Promise<DeploymentRow> {
  const id = newId("dep");
  const now = nowIso();
  const superseded = (
    await db
      .select({ id: deployments.id })
      .from(deployments)
      .where(and(eq(deployments.podId, podId), eq(deployments.stage, "queued")))
  ).map((r) => r.id);
  const row: DeploymentRow = {
    id,
    podId,
    trigger: input.trigger,
    status: "deploying",
    stage: "queued",
    commitSha: input.commitSha ?? null,
    commitMessage: input.commitMessage ?? null,
    release: input.release ?? null,
    rollbackOf: input.rollbackOf ?? null,
    failureClass: null,
    failureMessage: null,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    buildMs: null,
  };
  const reason = `superseded by ${id}`;
  await db.batch([db.insert(deployments).values(row), ...supersedeStatements(db, podId, superseded, reason)]);
  try {
    await env.POD_DEPLOY.create({ id, params: { deploymentId: id, podId } });
  } catch (error) {
    // A deployment whose workflow never started must not stay queued (it would hold the queue).
    await finishDeployment(db, id, {
      ok: false,
      class: "unknown",
      message: `the deployment could not be started: ${String(error)}`,
    });
    throw error;
  }
  await wake(env, superseded);
  return row;
}

/**
 * A push's deployment. While a push's deployment is queued behind a running one, a newer push takes
 * its place (its commit and message, newest wins, as `enqueueDeployment` supersedes): no row, event
 * or workflow instance more per push, however many arrive while a deploy runs. The update is
 * conditional on the row still being queued, so one that just took its turn is left alone and the
 * push queues a deployment of its own.
 */
export async function enqueuePush(
  env: Bindings,
  db: Db,
  podId: string,
  input: { commitSha: string | null; commitMessage: string | null },
): Promise<DeploymentRow> {
  const [coalesced] = await db
    .update(deployments)
    .set({ commitSha: input.commitSha, commitMessage: input.commitMessage })
    .where(
      and(eq(deployments.podId, podId), eq(deployments.stage, "queued"), eq(deployments.trigger, "push")),
    )
    .returning();
  return coalesced ?? enqueueDeployment(env, db, podId, { trigger: "push", ...input });
}

/** Ends the pod's queued deployments (those still queued) as failed for `reason`, each with its event. */
function supersedeStatements(db: Db, podId: string, ids: string[], reason: string) {
  if (ids.length === 0) return [];
  return [
    db
      .update(deployments)
      .set({
        status: "failed",
        stage: "done",
        failureClass: "unknown",
        failureMessage: reason,
        finishedAt: nowIso(),
      })
      .where(and(inArray(deployments.id, ids), eq(deployments.stage, "queued"))),
    ...ids.map((id) =>
      recordEventStatement(db, podId, "deploy_failed", `deployment ${id} did not run: ${reason}`, {
        class: "unknown",
        deployment_id: id,
      }),
    ),
  ] as const;
}

/** Every queued deployment of the pod ends failed (the repository was disconnected, the pod deleted). */
export async function cancelQueued(env: Bindings, db: Db, podId: string, reason: string) {
  const ids = (
    await db
      .select({ id: deployments.id })
      .from(deployments)
      .where(and(eq(deployments.podId, podId), eq(deployments.stage, "queued")))
  ).map((r) => r.id);
  const statements = supersedeStatements(db, podId, ids, reason);
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  await wake(env, ids);
}

/** Wakes waiting instances so they look again (and end, when superseded); best effort. */
export async function wake(env: Bindings, ids: string[]) {
  for (const id of ids) {
    try {
      await (await env.POD_DEPLOY.get(id)).sendEvent({ type: TURN_EVENT, payload: "turn" });
    } catch (error) {
      console.warn(JSON.stringify({ msg: "could not wake a queued deployment", id, error: String(error) }));
    }
  }
}

export type Turn = "run" | "over" | "wait" | "pod-creating" | "pod-moving";

/**
 * Whether the deployment may run now: it takes the pod's one running place when it is free (one
 * conditional UPDATE; the unique index refuses a second even in a race). A deployment of a pod gone
 * or failed to create ends here.
 */
export async function claimTurn(db: Db, deploymentId: string): Promise<Turn> {
  const [row] = await db
    .select({ stage: deployments.stage, podId: deployments.podId, podStatus: pods.status })
    .from(deployments)
    .leftJoin(pods, eq(pods.id, deployments.podId))
    .where(eq(deployments.id, deploymentId))
    .limit(1);
  if (!row || row.stage === "done") return "over";
  if (row.stage === "running") return "run";
  if (row.podStatus === "creating") return "pod-creating";
  // a pod being moved to another server deploys once it is there (../pods/moving.ts)
  if (row.podId && (await podMoving(db, row.podId))) return "pod-moving";
  if (row.podStatus !== "running" && row.podStatus !== "stopped") {
    await finishDeployment(db, deploymentId, {
      ok: false,
      class: "unknown",
      message:
        row.podStatus === "error" ? "the pod could not be created" : `the pod is ${row.podStatus ?? "gone"}`,
    });
    return "over";
  }
  try {
    await db.run(sql`UPDATE deployments SET stage = 'running', started_at = ${nowIso()}
      WHERE id = ${deploymentId} AND stage = 'queued'
        AND NOT EXISTS (SELECT 1 FROM deployments WHERE pod_id = ${row.podId} AND stage = 'running')
        AND NOT EXISTS (SELECT 1 FROM pod_moves WHERE pod_id = ${row.podId} AND status = 'moving')`);
  } catch {
    // the unique index: another deployment took the place at the same moment
    return "wait";
  }
  const [after] = await db
    .select({ stage: deployments.stage })
    .from(deployments)
    .where(eq(deployments.id, deploymentId));
  return after?.stage === "running" ? "run" : after?.stage === "done" ? "over" : "wait";
}

export type Finish =
  | { ok: true; commitSha: string; commitMessage: string; release: string }
  | { ok: false; class: string; message: string; commitSha?: string | null; commitMessage?: string | null };

/**
 * Records a deployment's end once (only a row not yet done changes), with its event: `deployment`
 * on success, `deploy_failed` with the class otherwise. A successful rollback marks the deployment
 * it rolled back from `rolled_back`. Returns whether this call recorded it.
 */
export async function finishDeployment(
  db: Db,
  deploymentId: string,
  end: Finish,
  opts: { rolledBackFrom?: string } = {},
): Promise<boolean> {
  const [row] = await db.select().from(deployments).where(eq(deployments.id, deploymentId));
  if (!row || row.stage === "done") return false;
  const now = nowIso();
  const update = end.ok
    ? db
        .update(deployments)
        .set({
          status: "success",
          stage: "done",
          commitSha: end.commitSha,
          commitMessage: end.commitMessage,
          release: end.release,
          finishedAt: now,
        })
        .where(and(eq(deployments.id, deploymentId), sql`stage != 'done'`))
    : db
        .update(deployments)
        .set({
          status: "failed",
          stage: "done",
          failureClass: end.class,
          failureMessage: end.message,
          commitSha: end.commitSha ?? row.commitSha,
          commitMessage: end.commitMessage ?? row.commitMessage,
          finishedAt: now,
        })
        .where(and(eq(deployments.id, deploymentId), sql`stage != 'done'`));
  const short = (sha: string | null | undefined) => (sha ? sha.slice(0, 7) : "");
  const event = end.ok
    ? recordEventStatement(
        db,
        row.podId,
        "deployment",
        row.trigger === "rollback"
          ? `rolled back to ${short(end.commitSha)} (deployment ${row.rollbackOf})`
          : `deployed ${short(end.commitSha)}: ${end.commitMessage.split("\n")[0]?.slice(0, 200) ?? ""}`,
        { deployment_id: row.id, trigger: row.trigger, commit_sha: end.commitSha },
      )
    : recordEventStatement(db, row.podId, "deploy_failed", `deployment ${row.id} failed: ${end.message}`, {
        class: end.class,
        deployment_id: row.id,
        trigger: row.trigger,
      });
  const results = await db.batch([update, event]);
  const changed = (results[0] as { meta?: { changes?: number } }).meta?.changes ?? 1;
  if (end.ok && opts.rolledBackFrom && changed > 0) {
    await db
      .update(deployments)
      .set({ status: "rolled_back" })
      .where(and(eq(deployments.id, opts.rolledBackFrom), eq(deployments.status, "success")));
  }
  return changed > 0;
}

/** The deployment that waits next for the pod (at most one is queued), if any. */
export async function nextQueued(db: Db, podId: string): Promise<string | undefined> {
  const [row] = await db
    .select({ id: deployments.id })
    .from(deployments)
    .where(and(eq(deployments.podId, podId), eq(deployments.stage, "queued")))
    .orderBy(desc(deployments.createdAt))
    .limit(1);
  return row?.id;
}
