import { fail, ok, type Result } from "../../../shared/errors";
import type { Op, OpParams, OpResult } from "../../../shared/protocol";
import type { ServiceContext } from "../context";
import { callHost } from "../hosts/host-client";
import { findTeamPod, type PodWithHost } from "./lookup";
import { hostFailure, hostOf } from "./power";

export interface PodTarget {
  found: PodWithHost;
  hostId: string;
}

export const NOT_RUNNING = "pod is not running; start it first";

/**
 * The team's pod and the host it lives on: what every "inside the pod" verb starts from.
 * `running: true` also refuses a pod the control plane does not believe is running (400, as the
 * spec's "pod not running where required"); the host checks the container again.
 */
export async function podTarget(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  opts: { running?: boolean } = {},
): Promise<Result<PodTarget>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  if (opts.running && found.value.pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const hostId = hostOf(found.value);
  if (!hostId.ok) return hostId;
  return ok({ found: found.value, hostId: hostId.value });
}

/**
 * One op on the host of the team's pod: the lookup, the call, and the host's failure in the pod's
 * words — what each simple inside-the-pod verb is made of. `running` (the default) also refuses a
 * pod that is not running with the usual 400.
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
  const r = await callHost(ctx.env, target.value.hostId, op, params, { timeoutMs: opts.timeoutMs });
  return r.ok ? r : hostFailure(r, name);
}
