import type { ContainerCreateOptions } from "dockerode";
import type { PodLimits } from "../../shared/protocol";
import type { ServiceType } from "../../shared/protocol/services";
import { POD_ISOLATION } from "../docker/isolation";
import { podNames, serviceLabels, serviceNames } from "../docker/naming";

const MB = 1024 * 1024;
/** where the service images keep their data (images/README.md "Service images") */
export const SERVICE_DATA = "/var/lib/svc";

/**
 * Each service's share of the plan's memory: an eighth, at least 128 MB and at most 512 MB. The
 * app container's limit is the plan's memory less its services' shares (./memory.ts), so a pod
 * with services uses no more memory in all than its plan says.
 */
export function serviceMemoryMb(limits: PodLimits): number {
  return Math.min(512, Math.max(128, Math.floor(limits.memoryMb / 8)));
}

/** the least the app container keeps, whatever services take */
export const MIN_APP_MEMORY_MB = 128;

/**
 * A database sidecar, isolated like a pod container (../docker/container-spec.ts): uid 1000, every
 * capability dropped, the pods' seccomp profile and no-new-privileges, read-only root with tmpfs
 * for its sockets (/run/svc) and /tmp, its own data volume and nothing else. Its network is the
 * pod container's namespace (`container:`), so the app reaches it on 127.0.0.1 and nothing else
 * does; it listens on 127.0.0.1 only. No restart policy: the agent starts it after its pod
 * container (a `container:` sidecar needs the pod's current namespace, ./sidecars.ts).
 */
export function sidecarCreateOptions(
  prefix: string,
  pod: string,
  podId: string,
  type: ServiceType,
  image: string,
  limits: PodLimits,
): ContainerCreateOptions {
  const n = serviceNames(prefix, pod, type);
  const memory = serviceMemoryMb(limits) * MB;
  return {
    name: n.container,
    Image: image,
    User: "1000:1000",
    Labels: serviceLabels(prefix, pod, podId, type),
    StopTimeout: 20,
    HostConfig: {
      ...POD_ISOLATION,
      Tmpfs: {
        "/run/svc": `rw,noexec,nosuid,nodev,uid=1000,gid=1000,mode=0700,size=${16 * MB}`,
        "/tmp": `rw,noexec,nosuid,nodev,mode=1777,size=${64 * MB}`,
      },
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: Math.round(limits.cpu * 1e9),
      PidsLimit: 128,
      OomScoreAdj: 500,
      Mounts: [{ Type: "volume", Source: n.volume, Target: SERVICE_DATA, ReadOnly: false }],
      NetworkMode: `container:${podNames(prefix, pod).container}`,
      RestartPolicy: { Name: "no" },
      LogConfig: { Type: "json-file", Config: { "max-size": "5m", "max-file": "2" } },
    },
  };
}
