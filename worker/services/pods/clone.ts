import { findPlan, type PresetSlug } from "../../../shared/catalog";
import { fail, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import { isAlive } from "../hosts/hosts";
import { copyPodKeyRecords } from "../ssh/key-records";
import { admitPod } from "./admission";
import { startCreation } from "./create";
import { findTeamPod } from "./lookup";
import { podSpec } from "./spec";
import type { PodView } from "./view";

/**
 * A new pod with the source's preset, plan, files and environment, on the source's host when it has
 * room, else on another host of the region (the files go host to host through R2). Answers 201 with the pod `creating`; the pod-create workflow copies the
 * files and ends it `running`, or `error` with the reason in an event.
 */
export async function clonePod({
  ctx,
  teamId,
  input,
}: {
  ctx: ServiceContext;
  teamId: string;
  input: { source: string; new_name: string };
}): Promise<Result<PodView>> {
  const found = await findTeamPod(ctx.db, teamId, input.source);
  if (!found.ok) return found;
  const source = found.value.pod;
  const plan = findPlan(source.planSlug);
  if (!plan || !source.hostId)
    return fail("conflict", `pod ${input.source} cannot be cloned in its current state`);

  const sourceHost = found.value.host;
  if (!sourceHost || !isAlive(sourceHost))
    return fail(
      "unavailable",
      `server ${sourceHost?.name ?? source.hostId} of pod ${input.source} is offline; try again shortly`,
    );
  const admission = {
    teamId,
    name: input.new_name,
    preset: source.preset as PresetSlug,
    plan,
    region: { region: source.region, fallbackRegions: [] },
    description: source.description,
  };
  const events = {
    message: `pod ${input.new_name} cloned from ${input.source}`,
    metadata: { cloned_from: input.source },
  };
  // The source's own host first: the copy then never leaves the machine. When it takes no new pods
  // (full, drained, a problem), any host of the region will do and the files travel.
  let admitted = await admitPod(ctx, { ...admission, serverId: sourceHost.id }, events);
  if (!admitted.ok && admitted.code === "unavailable") admitted = await admitPod(ctx, admission, events);
  if (!admitted.ok) return admitted;
  const { pod, host, sshPort } = admitted.value;
  await copyPodKeyRecords(ctx.db, found.value.pod.id, pod.id);
  const spec = podSpec({
    podId: pod.id,
    name: pod.name,
    sshPort,
    preset: pod.preset as PresetSlug,
    plan,
    podDomain: ctx.env.POD_DOMAIN,
  });
  return startCreation(ctx, pod, host, {
    podId: pod.id,
    hostId: host.id,
    hostName: host.name,
    spec,
    seed: { kind: "clone", source: input.source, sourceHostId: sourceHost.id },
  });
}
