import { createHash } from "node:crypto";

/**
 * Names and labels of everything the agent makes for a pod. The prefix keeps one agent's (or one
 * test run's) objects apart from any other's on the same engine.
 */
export const LABEL_POD = "podhost.pod";
export const LABEL_POD_ID = "podhost.pod_id";
export const LABEL_PREFIX = "podhost.prefix";
/** what the ingress needs to re-render a vhost when the engine restarts a container on its own */
export const LABEL_DOMAIN = "podhost.domain";
export const LABEL_PORT = "podhost.port";
/** the host port of the pod's SSH listener: the gateway reopens it from here when the agent starts */
export const LABEL_SSH_PORT = "podhost.ssh_port";

export const HOME = "/home/pod_user";
export const POD_UID = 1000;
export const POD_GID = 1000;

export interface PodNames {
  container: string;
  volume: string;
  network: string;
}

export function podNames(prefix: string, pod: string): PodNames {
  return { container: `${prefix}-${pod}`, volume: `${prefix}-${pod}-home`, network: `${prefix}-${pod}` };
}

/**
 * A container the agent makes for a pod beside the pod's own (git build and candidate, clone,
 * one-off runs, database sidecars, backup helpers): the pod's container name, `_`, a role. A pod
 * name has no `_`, so no such name is ever another pod's container — with `-build` it was: pod
 * `shop`'s deploy removed the container of a stranger's pod `shop-build` on the same host.
 */
export const helperName = (podContainer: string, role: string) => `${podContainer}_${role}`;

/**
 * Every pod bridge's interface is named `phb` + 12 hex of its network's name (15 characters, the
 * kernel's limit), so the host's egress rules match all pods with one `-i phb+`
 * (scripts/host/ensure-egress.sh). Networks made before this keep Docker's `br-<id>`.
 */
export const POD_BRIDGE_PREFIX = "phb";
export const podBridgeName = (network: string) =>
  `${POD_BRIDGE_PREFIX}${createHash("sha256").update(network).digest("hex").slice(0, 12)}`;

export function podLabels(prefix: string, pod: string, podId: string): Record<string, string> {
  return { [LABEL_POD]: pod, [LABEL_POD_ID]: podId, [LABEL_PREFIX]: prefix };
}

/** The label filter that selects every object of one prefix (for list and events calls). */
export const prefixFilter = (prefix: string) => ({ label: [`${LABEL_PREFIX}=${prefix}`] });

/**
 * A pod's database service sidecars (agent/services/). They carry the prefix and the pod's id but
 * not LABEL_POD: every reader of LABEL_POD (inventory, events, SSH gateway, metrics) sees only pod
 * containers, as with the git helpers. LABEL_SERVICE is the type, LABEL_SERVICE_POD the pod's name.
 */
export const LABEL_SERVICE = "podhost.service";
export const LABEL_SERVICE_POD = "podhost.service.pod";

export interface ServiceNames {
  container: string;
  volume: string;
}

/**
 * The short-lived helpers a backup or restore of a stopped pod runs in (agent/backups/stopped-pod.ts):
 * the pod's container name or a sidecar's, plus `_backup`. No pod or sidecar container can be named
 * so (a pod name has no `_`), so removing a helper by its name never hits a tenant's container.
 */
export const backupHelperName = (container: string) => helperName(container, "backup");
/** the pod a backup helper works for (beside the prefix and LABEL_HELPER), for leftovers */
export const LABEL_BACKUP_POD = "podhost.backup.pod";

export function serviceNames(prefix: string, pod: string, type: string): ServiceNames {
  // The volume keeps its `-svc-` name (volumes and containers are apart: no pod's volume is named
  // so); the container is a helper name.
  return {
    container: helperName(podNames(prefix, pod).container, `svc-${type}`),
    volume: `${prefix}-${pod}-svc-${type}`,
  };
}

export function serviceLabels(
  prefix: string,
  pod: string,
  podId: string,
  type: string,
): Record<string, string> {
  return {
    [LABEL_PREFIX]: prefix,
    [LABEL_POD_ID]: podId,
    [LABEL_SERVICE]: type,
    [LABEL_SERVICE_POD]: pod,
  };
}
