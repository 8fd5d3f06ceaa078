import { POD_USER } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import { findTeamPod } from "../pods/lookup";

/** SSH into a pod: where to connect (the host's SSH gateway, on the pod's own port). */
export interface SshAccess {
  user: string;
  host: string;
  port: number;
  ssh_ready: true;
  command: string;
}

export async function sshAccess({
  ctx,
  teamId,
  input: { name },
}: {
  ctx: ServiceContext;
  teamId: string;
  input: { name: string };
}): Promise<Result<SshAccess>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const { pod, host } = found.value;
  if (!host || pod.sshPort === null) {
    return fail("unavailable", `pod ${name} has no SSH port allocated yet; try again shortly`, {
      ssh_ready: false,
    });
  }
  return ok({
    user: POD_USER,
    host: host.sshHost,
    port: pod.sshPort,
    ssh_ready: true,
    command: `ssh -p ${pod.sshPort} ${POD_USER}@${host.sshHost}`,
  });
}
