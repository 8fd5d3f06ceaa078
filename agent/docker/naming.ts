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

export function podLabels(prefix: string, pod: string, podId: string): Record<string, string> {
  return { [LABEL_POD]: pod, [LABEL_POD_ID]: podId, [LABEL_PREFIX]: prefix };
}

/** The label filter that selects every object of one prefix (for list and events calls). */
export const prefixFilter = (prefix: string) => ({ label: [`${LABEL_PREFIX}=${prefix}`] });
