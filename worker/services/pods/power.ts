import { fail, ok, type Result } from "../../../shared/errors";
import { callHost } from "../../durable-objects/host-agent/client";
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
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const t = transitions[action];
  const result = await callTarget(ctx, target.value, t.op, { name }, { timeoutMs: POWER_TIMEOUT_MS });
  if (!result.ok) return result;
  const podId = target.value.found.pod.id;
  await recordEventStatement(ctx.db, podId, t.event, t.message);
  return viewOf(ctx, podId);
}

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
