import { eq } from "drizzle-orm";
import { findPlan, type PresetSlug } from "../../../shared/catalog";
import { fail, type Result } from "../../../shared/errors";
import { pods } from "../../db/schema";
import type { ServiceContext } from "../context";
import { callHost } from "../hosts/host-client";
import { admitPod } from "./create";
import { recordEventStatement } from "./events";
import { findTeamPod } from "./lookup";
import { releaseHost } from "./placement";
import { hostFailure, viewOf } from "./power";
import { podSpec } from "./spec";
import type { PodView } from "./view";

const CLONE_TIMEOUT_MS = 180_000;

/**
 * A new pod with the source's preset, plan, files and environment, on the source's host (the copy
 * never leaves the machine). A failed clone leaves nothing behind: row and room are given back.
 */
export async function clonePod(
  ctx: ServiceContext,
  teamId: string,
  sourceName: string,
  newName: string,
): Promise<Result<PodView>> {
  const found = await findTeamPod(ctx.db, teamId, sourceName);
  if (!found.ok) return found;
  const source = found.value.pod;
  const plan = findPlan(source.planSlug);
  if (!plan || !source.hostId)
    return fail("conflict", `pod ${sourceName} cannot be cloned in its current state`);

  const admitted = await admitPod(
    ctx.db,
    {
      teamId,
      name: newName,
      preset: source.preset as PresetSlug,
      plan,
      region: { region: source.region, fallbackRegions: [] },
      serverId: source.hostId,
      description: source.description,
    },
    { message: `pod ${newName} cloned from ${sourceName}`, metadata: { cloned_from: sourceName } },
  );
  if (!admitted.ok) return admitted;
  const { pod, host, sshPort } = admitted.value;

  const spec = podSpec({
    podId: pod.id,
    name: pod.name,
    sshPort,
    preset: pod.preset as PresetSlug,
    plan,
    podDomain: ctx.env.POD_DOMAIN,
  });
  const result = await callHost(
    ctx.env,
    host.id,
    "pod.clone",
    { source: sourceName, spec },
    {
      timeoutMs: CLONE_TIMEOUT_MS,
      idempotencyKey: `pod.clone:${pod.id}`,
    },
  );
  if (!result.ok) {
    await ctx.db.batch([ctx.db.delete(pods).where(eq(pods.id, pod.id)), releaseHost(ctx.db, host.id, plan)]);
    return hostFailure(result, sourceName);
  }
  await recordEventStatement(ctx.db, pod.id, "started", "pod is running");
  return viewOf(ctx, pod.id);
}
