import { asc, eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { podServices } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { type ServiceView, toServiceView } from "./views";

/** `GET /api/pods/{name}/services`: the pod's services, oldest first; `[]` when none. */
export async function listServices({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<ServiceView[]>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const rows = await ctx.db
    .select()
    .from(podServices)
    .where(eq(podServices.podId, pod.id))
    .orderBy(asc(podServices.createdAt), asc(podServices.serviceType));
  return ok(rows.map((row) => toServiceView(row, pod)));
}
