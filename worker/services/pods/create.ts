import type { PresetSlug } from "../../../shared/catalog";
import { ok, type Result, reasonOf } from "../../../shared/errors";
import type { HostRow, PodRow } from "../../db/schema";
import type { PodCreateParams, PodSeed } from "../../workflows/pod-create";
import type { Caller } from "../auth/caller";
import type { ServiceContext } from "../context";
import { recordPodKeys } from "../ssh/key-records";
import { newPodAuthorizedKeys } from "../ssh-keys/ssh-keys";
import { admitPod, resolvePlan, resolveRegion } from "./admission";
import { markCreateFailed } from "./create-outcome";
import { type Customizations, podSpec } from "./spec";
import { type PodView, toPodView } from "./view";

export interface CreatePodInput {
  name: string;
  preset: PresetSlug;
  plan_slug: string;
  region?: string;
  server_id?: string;
  ssh_key?: string;
  description?: string;
  customizations?: Customizations;
}

/**
 * `POST /api/pods`: admitted here (202, `creating`), made on its host by the pod-create workflow,
 * which ends it `running`, or `error` with the reason in an event.
 */
export async function createPod({
  ctx,
  caller,
  input,
  country,
  seed,
}: {
  ctx: ServiceContext;
  caller: Caller;
  input: CreatePodInput;
  /** the client's country (Cloudflare's request.cf), for the region when none is named */
  country?: string;
  /** what the new pod's files start from (from-zip's archive) */
  seed?: PodSeed;
}): Promise<Result<PodView>> {
  const plan = resolvePlan(input.plan_slug);
  if (!plan.ok) return plan;
  const region = resolveRegion(input.region, country);
  if (!region.ok) return region;
  // The request's key and the caller's auto_inject account keys, read once: keys added later never reach this pod.
  const authorizedKeys = await newPodAuthorizedKeys(ctx.db, caller.user.id, input.ssh_key);
  if (!authorizedKeys.ok) return authorizedKeys;

  const admitted = await admitPod(
    ctx,
    {
      teamId: caller.teamId,
      name: input.name,
      preset: input.preset,
      plan: plan.value,
      region: region.value,
      serverId: input.server_id,
      description: input.description,
    },
    {
      message: `pod ${input.name} created (${input.preset}, ${plan.value.slug})`,
      metadata: { preset: input.preset },
    },
  );
  if (!admitted.ok) return admitted;
  const { pod, host, sshPort } = admitted.value;
  // Who put which key in: what takes them out again when that member leaves the team.
  await recordPodKeys(ctx.db, pod.id, caller.user.id, authorizedKeys.value);
  const spec = podSpec({
    podId: pod.id,
    name: pod.name,
    sshPort,
    preset: input.preset,
    plan: plan.value,
    podDomain: ctx.env.POD_DOMAIN,
    customizations: input.customizations,
    authorizedKeys: authorizedKeys.value.map((k) => k.line),
  });
  return startCreation(ctx, pod, host, { podId: pod.id, hostId: host.id, hostName: host.name, spec, seed });
}

/**
 * Hands an admitted pod to its workflow (instance id = pod id, so a second start is refused, never
 * doubled). A workflow that cannot even start leaves the pod `error`, not `creating`.
 */
export async function startCreation(
  ctx: ServiceContext,
  pod: PodRow,
  host: HostRow,
  params: PodCreateParams,
): Promise<Result<PodView>> {
  try {
    await ctx.env.POD_CREATE.create({ id: pod.id, params });
  } catch (error) {
    await markCreateFailed(
      ctx.env,
      ctx.db,
      pod.id,
      `the control plane could not start the creation's workflow (${reasonOf(error, "no reason given")})`,
    );
    throw error;
  }
  return ok(toPodView(pod, host.name, ctx.env.POD_DOMAIN));
}
