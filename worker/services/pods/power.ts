import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext, TeamCall } from "../context";
import { callHost } from "../hosts/host-client";
import { type PodEventType, recordEventStatement } from "./events";
import { findTeamPod, type PodWithHost, readPodRow } from "./lookup";
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

/** The pod must be on a host for anything the host does. */
export function hostOf(found: PodWithHost): Result<string> {
  return found.pod.hostId ? ok(found.pod.hostId) : fail("unavailable", "the pod has no host yet");
}

/** A container the host no longer has is a state problem of the pod, not a missing API resource. */
export function hostFailure(result: { code: string; message: string }, podName: string) {
  if (result.code === "not_found") {
    return fail(
      "conflict",
      `pod ${podName} has no container on its host (status error); delete it or restore a backup`,
    );
  }
  return fail(result.code as Parameters<typeof fail>[0], result.message);
}

export async function powerPod({
  ctx,
  teamId,
  input: { name, action },
}: TeamCall<{ name: string; action: PowerAction }>): Promise<Result<PodView>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const hostId = hostOf(found.value);
  if (!hostId.ok) return hostId;
  const t = transitions[action];
  const result = await callHost(ctx.env, hostId.value, t.op, { name }, { timeoutMs: POWER_TIMEOUT_MS });
  if (!result.ok) return hostFailure(result, name);
  await recordEventStatement(ctx.db, found.value.pod.id, t.event, t.message);
  return viewOf(ctx, found.value.pod.id);
}

/** The pod with its status as the host sees it right now; 503 when the host cannot be asked. */
export async function getPodLive({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<PodView>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const hostId = hostOf(found.value);
  if (!hostId.ok) return hostId;
  const result = await callHost(
    ctx.env,
    hostId.value,
    "pod.inspect",
    { name },
    { timeoutMs: INSPECT_TIMEOUT_MS },
  );
  if (!result.ok) return fail(result.code, result.message);
  return viewOf(ctx, found.value.pod.id);
}
