import { POD_USER } from "../../../shared/catalog";
import { ok, type Result } from "../../../shared/errors";
import type { ServiceType } from "../../../shared/protocol/services";
import type { ServiceStatus } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamService } from "./lookup";
import { openPassword } from "./passwords";
import { SERVICE_HOST, statusOf } from "./views";

/** The spec's Credentials record; username and database only for MySQL and PostgreSQL. */
export interface CredentialsView {
  service_type: ServiceType;
  status: ServiceStatus;
  host: string;
  port: number;
  username?: string;
  password: string;
  database?: string;
}

/**
 * `GET /api/pods/{name}/services/{serviceType}/credentials`: the one place the password is shown
 * (to the pod's team, any status: it is fixed at install and the app may be configured before the
 * server runs).
 */
export async function getServiceCredentials({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; serviceType: ServiceType }>): Promise<Result<CredentialsView>> {
  const found = await findTeamService(ctx.db, teamId, input.name, input.serviceType);
  if (!found.ok) return found;
  const { pod, service } = found.value;
  const password = await openPassword(ctx.env, service, service.passwordEncrypted);
  if (!password.ok) return password;
  return ok({
    service_type: service.serviceType,
    status: statusOf(service, pod),
    host: SERVICE_HOST,
    port: service.port,
    ...(service.serviceType === "redis" ? {} : { username: POD_USER }),
    password: password.value,
    ...(service.serviceType === "redis" ? {} : { database: POD_USER }),
  });
}
