import { and, eq, inArray, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { OpParams, OpResult } from "../../../shared/protocol";
import type { DriftAction } from "../../../shared/protocol/reconcile";
import type { Db } from "../../db/client";
import { backups, podMoves, podServices, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { alertOnPodStatus } from "../alerts/host-reports";
import { STAGED_BLOB_TTL_MS } from "../blobs/staging";
import { findHostByName } from "../hosts/moves";
import { applyPodState, type PodStatusChange } from "../pods/host-sync";

/**
 * The reconciler (docs/reliability.md "Drift"): what a host holds against what D1 records. The
 * host's side is the `host.reconcile` op (agent/reconcile/): orphans under its prefix removed once
 * older than the grace period, or reported where they hold data. This side adds:
 * - pods whose container the host does not have: a `running` or `stopped` pod becomes `error` with an
 *   event (the same path as a container that vanishes while the agent watches), and its owners are
 *   alerted as for any pod error;
 * - R2 objects of the host's pods that no backup record owns (a failed backup's archive, an object
 *   whose row is gone), and staged blobs of the host past their lifetime: deleted.
 * Runs on the agent's hello, every RECONCILE_EVERY_MS while it stays connected (the HostAgent's
 * timer), and at an operator's request (`npm run host:reconcile`, `POST /operator/hosts/{host}/reconcile`).
 */

/** orphans younger than this are left alone: an operation in flight made them */
export const RECONCILE_GRACE_MS = 10 * 60_000;
/** how often a connected host is reconciled */
export const RECONCILE_EVERY_MS = 10 * 60_000;
/** how long the host may take for its pass (a few engine lists, removals) */
const RECONCILE_TIMEOUT_MS = 120_000;
/** R2 listings per pass: pods beyond it are looked at by a later pass */
const MAX_BACKUP_LISTINGS = 200;
/** backups whose archive is wanted: in progress (being written) or completed */
const LIVE_BACKUP = ["in_progress", "completed"] as const;

export type ReconcileTrigger = "hello" | "periodic" | "operator";

export interface ReconcileFinding {
  kind: OpResult<"host.reconcile">["findings"][number]["kind"] | "backup_object" | "staged_blob";
  name: string;
  pod: string | null;
  action: DriftAction;
  detail: string;
}

export interface ReconcileReport {
  host: string;
  trigger: ReconcileTrigger;
  dry_run: boolean;
  grace_ms: number;
  at: string;
  /** orphans found on the host and in R2, each with what was done */
  findings: ReconcileFinding[];
  /** pods whose container the host does not have; `marked_error` when the pod became `error` */
  missing: { pod: string; action: "marked_error" | "would_mark_error" | "left" }[];
}

export interface ReconcileInput {
  /** the host's name or id */
  host: string;
  trigger: ReconcileTrigger;
  dryRun?: boolean;
  graceMs?: number;
}

/** How the caller reaches the host: the Worker's callHost, or the HostAgent object's own call. */
export type ReconcileCall = (
  params: OpParams<"host.reconcile">,
  timeoutMs: number,
) => Promise<Result<OpResult<"host.reconcile">>>;

export async function reconcileHost({
  env,
  db,
  call,
  input,
}: {
  env: Bindings;
  db: Db;
  call: ReconcileCall;
  input: ReconcileInput;
}): Promise<Result<ReconcileReport>> {
  const host = await findHostByName(db, input.host);
  if (!host) return fail("not_found", `no host named ${input.host}`);
  const dryRun = input.dryRun ?? false;
  const graceMs = input.graceMs ?? RECONCILE_GRACE_MS;

  const placed = await db
    .select({ id: pods.id, name: pods.name, status: pods.status })
    .from(pods)
    .where(and(eq(pods.hostId, host.id), ne(pods.status, "deleted")));
  // a pod leaving this host keeps its objects here until its move has ended (an undone move
  // starts it here again)
  const leaving = await db
    .select({ id: podMoves.podId, name: podMoves.podName })
    .from(podMoves)
    .where(and(eq(podMoves.fromHostId, host.id), inArray(podMoves.status, ["queued", "moving"])));
  const services = await db
    .select({ podId: podServices.podId, type: podServices.serviceType })
    .from(podServices)
    .innerJoin(pods, eq(pods.id, podServices.podId))
    .where(and(eq(pods.hostId, host.id), ne(pods.status, "deleted")));
  const known = new Map<
    string,
    { id: string; name: string; services: (typeof services)[number]["type"][] }
  >();
  for (const p of [...placed, ...leaving]) known.set(p.id, { id: p.id, name: p.name, services: [] });
  for (const s of services) known.get(s.podId)?.services.push(s.type);

  const answer = await call({ pods: [...known.values()], graceMs, dryRun }, RECONCILE_TIMEOUT_MS);
  if (!answer.ok) return answer;
  const findings: ReconcileFinding[] = [...answer.value.findings];

  // Records without their host objects: only pods the host decides the state of (a pod still being
  // created has its command to settle it; a suspended one is the control plane's).
  const missing: ReconcileReport["missing"] = [];
  const changes: PodStatusChange[] = [];
  const statusOf = new Map(placed.map((p) => [p.name, p.status]));
  for (const pod of answer.value.missing) {
    const status = statusOf.get(pod);
    if (status !== "running" && status !== "stopped") {
      missing.push({ pod, action: "left" });
      continue;
    }
    if (dryRun) {
      missing.push({ pod, action: "would_mark_error" });
      continue;
    }
    const change = await applyPodState(
      db,
      host.id,
      { name: pod, state: "missing", ip: null },
      { reason: "the reconciler found no container for the pod on its host" },
    );
    if (change) changes.push(change);
    missing.push({ pod, action: "marked_error" });
  }
  if (changes.length > 0) await alertOnPodStatus(env, db, changes);

  findings.push(...(await orphanObjects(env, db, host.id, { dryRun, graceMs })));

  const report: ReconcileReport = {
    host: host.name,
    trigger: input.trigger,
    dry_run: dryRun,
    grace_ms: graceMs,
    at: new Date().toISOString(),
    findings,
    missing,
  };
  if (findings.length > 0 || missing.length > 0)
    console.warn(
      JSON.stringify({
        msg: "reconcile: drift",
        host: host.name,
        trigger: input.trigger,
        findings: findings.map((f) => `${f.action} ${f.kind} ${f.name}`),
        missing,
      }),
    );
  return ok(report);
}

/**
 * R2 objects of the host's pods (every pod ever placed on it, deleted ones too) that no backup record
 * wants, and the host's staged blobs past their lifetime (the cron's sweep does these too; here they
 * are named). An object younger than the grace period may be an upload whose row is being written.
 */
async function orphanObjects(
  env: Bindings,
  db: Db,
  hostId: string,
  options: { dryRun: boolean; graceMs: number },
): Promise<ReconcileFinding[]> {
  const now = Date.now();
  const findings: ReconcileFinding[] = [];
  const judge = async (
    kind: ReconcileFinding["kind"],
    key: string,
    pod: string | null,
    uploaded: Date,
    minAgeMs: number,
    detail: string,
  ) => {
    const base = { kind, name: key, pod };
    if (now - uploaded.getTime() < minAgeMs) {
      findings.push({ ...base, action: "young", detail });
      return;
    }
    if (options.dryRun) {
      findings.push({ ...base, action: "would_remove", detail });
      return;
    }
    try {
      await env.BLOBS.delete(key);
      findings.push({ ...base, action: "removed", detail });
    } catch (error) {
      findings.push({ ...base, action: "failed", detail: `${detail}; deleting it failed: ${String(error)}` });
    }
  };

  const everPlaced = await db
    .select({ id: pods.id, name: pods.name })
    .from(pods)
    .where(eq(pods.hostId, hostId))
    .limit(MAX_BACKUP_LISTINGS);
  for (const pod of everPlaced) {
    const wanted = new Set(
      (
        await db
          .select({ key: backups.objectKey })
          .from(backups)
          .where(and(eq(backups.podId, pod.id), inArray(backups.status, [...LIVE_BACKUP])))
      ).map((b) => b.key),
    );
    let cursor: string | undefined;
    do {
      const page = await env.BLOBS.list({ prefix: `backups/${pod.id}/`, cursor, limit: 500 });
      for (const o of page.objects)
        if (!wanted.has(o.key))
          await judge(
            "backup_object",
            o.key,
            pod.name,
            o.uploaded,
            options.graceMs,
            "backup archive of no live backup record",
          );
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
  }

  let cursor: string | undefined;
  do {
    const page = await env.BLOBS.list({ prefix: `staging/${hostId}/`, cursor, limit: 500 });
    // a staged blob in its lifetime is an operation's: not even worth naming
    for (const o of page.objects.filter((o) => now - o.uploaded.getTime() >= STAGED_BLOB_TTL_MS))
      await judge(
        "staged_blob",
        o.key,
        null,
        o.uploaded,
        Math.max(options.graceMs, STAGED_BLOB_TTL_MS),
        "staged blob of no operation in progress",
      );
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return findings;
}
