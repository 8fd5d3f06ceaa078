import { ok, type Result } from "../../../shared/errors";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { domainsOfPod } from "./lookup";
import { type DomainView, toDomainView } from "./views";

/** `GET /api/pods/{name}/domains`: the pod's custom domains, oldest first; `[]` when none. */
export async function listDomains({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<DomainView[]>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  return ok((await domainsOfPod(ctx.db, pod.id)).map((row) => toDomainView(row, pod.name)));
}
