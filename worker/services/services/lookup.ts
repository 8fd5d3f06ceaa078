import { and, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceType } from "../../../shared/protocol/services";
import type { Db } from "../../db/client";
import { type PodServiceRow, podServices } from "../../db/schema";
import { findTeamPod, type PodWithHost } from "../pods/lookup";

/** The pod's service of `type`, if installed (any status). */
export const serviceRowOf = async (db: Db, podId: string, type: ServiceType) =>
  (
    await db
      .select()
      .from(podServices)
      .where(and(eq(podServices.podId, podId), eq(podServices.serviceType, type)))
      .limit(1)
  )[0];

/**
 * The team's pod and its service of `type`: another team's pod is the same 404 as a missing one
 * (findTeamPod), and so is a service that is not installed.
 */
export async function findTeamService(
  db: Db,
  teamId: string,
  name: string,
  type: ServiceType,
): Promise<Result<PodWithHost & { service: PodServiceRow }>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const service = await serviceRowOf(db, found.value.pod.id, type);
  return service
    ? ok({ ...found.value, service })
    : fail("not_found", `no ${type} service is installed on pod ${name}`);
}
