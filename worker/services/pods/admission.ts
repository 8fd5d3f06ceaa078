import {
  DEFAULT_REGION,
  dailyPrice,
  findPlan,
  findRegion,
  PLAN_SLUGS,
  type Plan,
  type PresetSlug,
  REGIONS,
} from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { type HostRow, type PodRow, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { billingAdmission } from "../billing/admission";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "./events";
import { claimName, nameHolder } from "./names";
import { freeSshPort, hostCandidates, lowestFreePort, releaseHost, reserveHost } from "./placement";

/**
 * Admission: everything that decides whether a new pod may exist and where — the plan, the region,
 * the name, a host with room (placement) and an SSH port on it — for create, from-zip and clone
 * alike. Billing's 402 joins here. Nothing is written unless every check passed.
 */

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
  ctx: Pick<ServiceContext, "db" | "env">,
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
  const { db } = ctx;
  // 402 before anything is reserved: no card, or a suspended subscription (with a processor configured).
  const billing = await billingAdmission(ctx, input.teamId, "creating pods", dailyPrice(input.plan));
  if (!billing.ok) return billing;
  const target = { serverId: input.serverId, ...input.region };
  // What decides the name and the host, read in one round trip.
  const [[holder], candidates] = await db.batch([nameHolder(db, input.name), hostCandidates(db, target)]);
  const claim = await claimName(db, input.name, holder);
  if (!claim.ok) return claim;
  const placed = await reserveHost(db, target, input.plan, candidates);
  if (!placed.ok) return placed;
  const { host, usedPorts } = placed.value;

  const tried = new Set<number>();
  for (let attempt = 0; attempt < 5; attempt++) {
    // the ports read with the reservation first; a port taken meanwhile sends us back to the table
    const port = attempt === 0 ? lowestFreePort(host, usedPorts) : await freeSshPort(db, host, tried);
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
