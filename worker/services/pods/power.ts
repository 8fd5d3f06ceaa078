import { and, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { pods } from "../../db/schema";
import { callHost } from "../../durable-objects/host-agent/client";
import { nowIso } from "../../lib/time";
import { subscriptionStanding } from "../billing/admission";
import type { ServiceContext, TeamCall } from "../context";
import { type PodEventType, recordEventStatement } from "./events";
import { readPodRow } from "./lookup";
import { callTarget, podTarget } from "./target";
import { type PodView, toPodView } from "./view";

/** start, stop and restart wait up to 30 s for the host to confirm (contract). */
const POWER_TIMEOUT_MS = 30_000;
/** a live status read should not hold a page up for long */
const INSPECT_TIMEOUT_MS = 5_000;

const transitions = {
  start: { op: "pod.start", event: "started", message: "pod started" },
  stop: { op: "pod.stop", event: "stopped", message: "pod stopped" },
  restart: { op: "pod.restart", event: "restarted", message: "pod restarted" },
} as const satisfies Record<string, { op: string; event: PodEventType; message: string }>;

export type PowerAction = keyof typeof transitions;

export async function viewOf(ctx: ServiceContext, podId: string): Promise<Result<PodView>> {
  const row = await readPodRow(ctx.db, podId);
  return row
    ? ok(toPodView(row.pod, row.host?.name ?? null, ctx.env.POD_DOMAIN))
    : fail("not_found", "pod not found");
}

export async function powerPod({
  ctx,
  teamId,
  input: { name, action },
}: TeamCall<{ name: string; action: PowerAction }>): Promise<Result<PodView>> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const { pod } = target.value.found;
  // Nothing of a suspended team runs (402); a pod its suspension stopped is started by `resume`,
  // or here once the team is in good standing again.
  if (action !== "stop") {
    const standing = await subscriptionStanding(ctx, teamId);
    if (!standing.ok) return standing;
  }
  const t = transitions[action];
  const result = await callTarget(ctx, target.value, t.op, { name }, { timeoutMs: POWER_TIMEOUT_MS });
  if (!result.ok) return result;
  // `suspended` is the control plane's status, which the host's answer does not move (host-sync).
  const leavesSuspension =
    pod.status === "suspended"
      ? ctx.db
          .update(pods)
          .set({
            status: STATUS_OF_STATE[result.value.state],
            ...(result.value.ip ? { ip: result.value.ip } : {}),
            updatedAt: nowIso(),
          })
          .where(and(eq(pods.id, pod.id), eq(pods.status, "suspended")))
      : null;
  const event = recordEventStatement(ctx.db, pod.id, t.event, t.message);
  await (leavesSuspension ? ctx.db.batch([leavesSuspension, event]) : event);
  return viewOf(ctx, pod.id);
}

const STATUS_OF_STATE = { running: "running", stopped: "stopped", missing: "error" } as const;

/**
 * The pod with its status as the host sees it right now; 503 when the host cannot be asked. The
 * host's failure is passed on as it is (not callTarget's words): a read does not call the pod broken.
 */
export async function getPodLive({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<PodView>> {
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const result = await callHost(
    ctx.env,
    target.value.hostId,
    "pod.inspect",
    { name },
    { timeoutMs: INSPECT_TIMEOUT_MS, teamId },
  );
  if (!result.ok) return fail(result.code, result.message);
  return viewOf(ctx, target.value.found.pod.id);
}
