import { and, eq } from "drizzle-orm";
import {
  DEFAULT_REGION,
  findPlan,
  findRegion,
  PLAN_SLUGS,
  type Plan,
  type PresetSlug,
  REGIONS,
} from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { OpParams } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { type HostRow, type PodRow, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { Caller } from "../auth/caller";
import type { ServiceContext } from "../context";
import { callHost } from "../hosts/host-client";
import { newPodAuthorizedKeys } from "../ssh-keys/ssh-keys";
import { recordEventStatement } from "./events";
import { claimableName } from "./names";
import { freeSshPort, releaseHost, reserveHost } from "./placement";
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

/** Work that outlives the response (the Worker's `waitUntil`). */
export type Background = (work: Promise<unknown>) => void;

/** What a flow adds around the background `pod.create` (from-zip: the staged archive, then a reload). */
export interface CreateExtras {
  /** once the host is known, before `pod.create`: params to add (a seed) */
  prepare?(hostId: string): Promise<Partial<OpParams<"pod.create">>>;
  /** more time for the host (unpacking an archive) */
  extraTimeoutMs?: number;
  /** after `pod.create`, whatever its outcome */
  finish?(outcome: { ok: boolean; podId: string; hostId: string }): Promise<void>;
}

const CREATE_TIMEOUT_MS = 120_000;

export function resolvePlan(slug: string): Result<Plan> {
  const plan = findPlan(slug);
  return plan
    ? ok(plan)
    : fail("bad_request", `plan_slug: unknown plan "${slug}"; one of ${PLAN_SLUGS.join(", ")}`);
}

export interface RegionChoice {
  region: string;
  /** tried in order when the client named no region and the preferred one is full */
  fallbackRegions: string[];
}

/** The region asked for (strict), else the one serving the client's country, then the others. */
export function resolveRegion(
  requested: string | undefined,
  country: string | undefined,
): Result<RegionChoice> {
  if (requested) {
    return findRegion(requested)
      ? ok({ region: requested, fallbackRegions: [] })
      : fail(
          "bad_request",
          `region: unknown region "${requested}"; one of ${REGIONS.map((r) => r.slug).join(", ")}`,
        );
  }
  const preferred =
    (country ? REGIONS.find((r) => r.countries.includes(country))?.slug : undefined) ?? DEFAULT_REGION;
  return ok({
    region: preferred,
    fallbackRegions: REGIONS.map((r) => r.slug).filter((r) => r !== preferred),
  });
}

/**
 * Inserts the pod row on a host that has room, with a free SSH port. Nothing is written unless
 * everything before it passed, and the reserved room is given back when the insert cannot happen.
 */
export async function admitPod(
  db: Db,
  input: {
    teamId: string;
    name: string;
    preset: PresetSlug;
    plan: Plan;
    region: RegionChoice;
    serverId?: string;
    description?: string;
  },
  events: { message: string; metadata?: Record<string, unknown> },
): Promise<Result<{ pod: PodRow; host: HostRow; sshPort: number }>> {
  const claim = await claimableName(db, input.name);
  if (!claim.ok) return claim;
  const placed = await reserveHost(db, { serverId: input.serverId, ...input.region }, input.plan);
  if (!placed.ok) return placed;
  const host = placed.value;

  const tried = new Set<number>();
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freeSshPort(db, host, tried);
    if (port === null) break;
    const now = nowIso();
    const pod: PodRow = {
      id: newId("pod"),
      name: input.name,
      teamId: input.teamId,
      preset: input.preset,
      status: "creating",
      planSlug: input.plan.slug,
      region: host.region,
      hostId: host.id,
      sshPort: port,
      ip: null,
      description: input.description ?? "",
      appHealthDiagnosis: null,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    try {
      await db.batch([
        db.insert(pods).values(pod),
        recordEventStatement(db, pod.id, "created", events.message, events.metadata),
      ]);
      return ok({ pod, host, sshPort: port });
    } catch (error) {
      const text = String(error);
      if (text.includes("pods.name")) {
        await releaseHost(db, host.id, input.plan);
        return fail("conflict", `pod name ${input.name} is already taken`);
      }
      if (!text.includes("pods.host_id")) {
        await releaseHost(db, host.id, input.plan);
        throw error;
      }
      tried.add(port); // another pod took this port a moment ago
    }
  }
  await releaseHost(db, host.id, input.plan);
  return fail("unavailable", `server ${host.name} has no free SSH port`);
}

export async function createPod(
  ctx: ServiceContext,
  caller: Caller,
  input: CreatePodInput,
  client: { country?: string },
  background: Background,
  extras: CreateExtras = {},
): Promise<Result<PodView>> {
  const plan = resolvePlan(input.plan_slug);
  if (!plan.ok) return plan;
  const region = resolveRegion(input.region, client.country);
  if (!region.ok) return region;
  // The request's key and the caller's auto_inject account keys, read once: keys added later never reach this pod.
  const authorizedKeys = await newPodAuthorizedKeys(ctx.db, caller.user.id, input.ssh_key);
  if (!authorizedKeys.ok) return authorizedKeys;

  const admitted = await admitPod(
    ctx.db,
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

  const spec = podSpec({
    podId: pod.id,
    name: pod.name,
    sshPort,
    preset: input.preset,
    plan: plan.value,
    podDomain: ctx.env.POD_DOMAIN,
    customizations: input.customizations,
    authorizedKeys: authorizedKeys.value,
  });
  background(provision(ctx, host.id, pod.id, spec, extras));
  return ok(toPodView(pod, host.name, ctx.env.POD_DOMAIN));
}

/** Runs the creation on the host; the HostAgent writes the running state, this records the outcome. */
async function provision(
  ctx: ServiceContext,
  hostId: string,
  podId: string,
  spec: ReturnType<typeof podSpec>,
  extras: CreateExtras,
) {
  let result: Result<unknown>;
  try {
    const params = { ...spec, ...(await extras.prepare?.(hostId)) };
    result = await callHost(ctx.env, hostId, "pod.create", params, {
      timeoutMs: CREATE_TIMEOUT_MS + (extras.extraTimeoutMs ?? 0),
      idempotencyKey: `pod.create:${podId}`,
    });
  } catch (error) {
    result = fail("internal", String(error)); // preparing failed (R2): the pod cannot be made
  }
  if (result.ok) {
    await recordEventStatement(ctx.db, podId, "started", "pod is running");
    await extras.finish?.({ ok: true, podId, hostId });
    return;
  }
  await ctx.db.batch([
    ctx.db
      .update(pods)
      .set({ status: "error", updatedAt: nowIso() })
      .where(and(eq(pods.id, podId), eq(pods.status, "creating"))),
    recordEventStatement(ctx.db, podId, "error", `creating the pod failed: ${result.message}`),
  ]);
  await extras.finish?.({ ok: false, podId, hostId });
}
