import { type Failure, fail, ok, type Result } from "../../../shared/errors";
import type { Op, OpParams, OpResult } from "../../../shared/protocol";
import { type CallOptions, callHost } from "../../durable-objects/host-agent/client";
import type { ServiceContext } from "../context";
import { findTeamPod, type PodWithHost } from "./lookup";
import { refuseWhileMoving } from "./moving";

/**
 * A pod on its host: every verb that asks a pod's host to do something starts here. It finds the
 * team's pod (another team's is the same 404 as a missing one), refuses one that has no host yet
 * (503) or, where the verb needs it, is not running (400), calls the host, and puts the host's
 * failures in the pod's words.
 */

export interface PodTarget {
  found: PodWithHost;
  hostId: string;
}

export const NOT_RUNNING = "pod is not running; start it first";

/** The pod must be on a host for anything the host does. */
export function hostOf(found: PodWithHost): Result<string> {
  return found.pod.hostId ? ok(found.pod.hostId) : fail("unavailable", "the pod has no host yet");
}

/** A container the host no longer has is a state problem of the pod, not a missing API resource. */
export function hostFailure(result: Failure, podName: string): Failure {
  if (result.code === "not_found") {
    return fail(
      "conflict",
      `pod ${podName} has no container on its host (status error); delete it or restore a backup`,
    );
  }
  return result;
}

/** A pod already found, with its host; for verbs that check their input between the lookup and the host. */
export function targetOf(found: PodWithHost): Result<PodTarget> {
  const hostId = hostOf(found);
  return hostId.ok ? ok({ found, hostId: hostId.value }) : hostId;
}

/**
 * The team's pod and the host it lives on: what every verb on a pod's host starts from.
 * `running: true` also refuses a pod the control plane does not believe is running (400, as the
 * spec's "pod not running where required"); the host checks the container again. `changes: true`
 * is for verbs that change the pod beyond its home: refused while the pod is being moved (./moving.ts).
 */
export async function podTarget(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  opts: { running?: boolean; changes?: boolean } = {},
): Promise<Result<PodTarget>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  if (opts.running && found.value.pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  if (opts.changes) {
    const settled = refuseWhileMoving(found.value);
    if (!settled.ok) return settled;
  }
  return targetOf(found.value);
}

/** One op on the host of a pod already targeted, the host's failure in the pod's words. */
export async function callTarget<O extends Op>(
  ctx: ServiceContext,
  target: PodTarget,
  op: O,
  params: OpParams<O>,
  opts: CallOptions = {},
): Promise<Result<OpResult<O>>> {
  const r = await callHost(ctx.env, target.hostId, op, params, {
    ...opts,
    teamId: target.found.pod.teamId,
  });
  return r.ok ? r : hostFailure(r, target.found.pod.name);
}

/**
 * One op on the host of the team's pod: the lookup, the call, and the host's failure in the pod's
 * words — what each simple verb is made of. `running` (the default) also refuses a pod that is not
 * running with the usual 400; `running: false` is for verbs that work on a stopped pod.
 */
export async function callPodHost<O extends Op>(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  op: O,
  params: OpParams<O>,
  opts: { timeoutMs: number; running?: boolean },
): Promise<Result<OpResult<O>>> {
  const target = await podTarget(ctx, teamId, name, { running: opts.running ?? true });
  if (!target.ok) return target;
  return callTarget(ctx, target.value, op, params, { timeoutMs: opts.timeoutMs });
}
