import type { PodRow, PodServiceRow, ServiceStatus } from "../../db/schema";

/**
 * The spec's Database service resource. `host` is where the app reaches the service: 127.0.0.1 inside
 * the pod (its sidecar shares the pod's network namespace). A running service of a pod that is not
 * running shows `stopped`: the sidecars stop and start with the pod on the host's own initiative, so
 * the status is derived from the pod's at read time rather than stored twice.
 */
export interface ServiceView {
  id: string;
  pod_name: string;
  service_type: PodServiceRow["serviceType"];
  status: ServiceStatus;
  version: string;
  host: string;
  port: number;
  error_msg?: string;
  created_at: string;
  updated_at: string;
}

export const SERVICE_HOST = "127.0.0.1";

export const statusOf = (row: PodServiceRow, pod: PodRow): ServiceStatus =>
  row.status === "running" && pod.status !== "running" ? "stopped" : row.status;

export const toServiceView = (row: PodServiceRow, pod: PodRow): ServiceView => ({
  id: row.id,
  pod_name: pod.name,
  service_type: row.serviceType,
  status: statusOf(row, pod),
  // empty until the server has reported its version (while installing, or after a failed install)
  version: row.version ?? "",
  host: SERVICE_HOST,
  port: row.port,
  ...(row.status === "error" && row.errorMsg ? { error_msg: row.errorMsg } : {}),
  created_at: row.createdAt,
  updated_at: row.updatedAt,
});
