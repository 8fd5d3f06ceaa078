import { fail, ok, type Result } from "../../../../shared/errors";
import type { ServiceContext } from "../../context";
import { findTeamPod, type PodWithHost } from "../lookup";
import { hostOf } from "../power";

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
