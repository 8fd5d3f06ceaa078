import { ok, type Result } from "../../../shared/errors";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { domainsOfPod } from "./lookup";
import { type DomainView, toDomainView } from "./views";

/** `GET /api/pods/{name}/domains`: `{domains}`, the pod's custom domains, oldest first (the contract's shape). */
export async function listDomains({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<{ domains: DomainView[] }>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  return ok({ domains: (await domainsOfPod(ctx.db, pod.id)).map((row) => toDomainView(row, pod.name)) });
}
