import type { ContainerCreateOptions } from "dockerode";
import type { PodLimits, PodSpec } from "../../shared/protocol";
import { POD_ISOLATION } from "./isolation";
import { HOME, helperName, LABEL_DOMAIN, LABEL_PORT, LABEL_SSH_PORT, podLabels, podNames } from "./naming";
import { POD_SECURITY_OPT } from "./seccomp";

/**
 * The isolation rules of a pod container, in one pure function (tested via `docker inspect`):
 * - never privileged, uid/gid 1000, every capability dropped and none added back (the images need
 *   none: nothing binds below 1024, nothing switches users), no-new-privileges;
 * - tini as PID 1 (`Init`) so `docker stop` is ~0.1–0.3 s instead of the 10 s timeout;
 * - CPU, memory (no swap) and pids from the plan; a higher OOM score than the host's daemons;
 * - read-only root filesystem: the images write only to the home volume, /run/pod (runit's service
 *   dir, nginx and php-fpm sockets) and /tmp, which are tmpfs here (tmpfs pages count against the
 *   memory limit). PHP's session dir is root-owned in the image, so it gets a tmpfs too;
 * - only the pod's own named volume, mounted at /home/pod_user (no host paths, no docker socket);
 *   the engine seeds an empty volume from the image's home at create time. The volume is bound to
 *   the pod's btrfs subvolume, limited to the plan's disk (../disk/pod-disk.ts);
 * - the pod's own bridge network and no published ports: only the host (the ingress) reaches it;
 * - `unless-stopped`: a crashed pod is brought back by the engine, while a pod stopped through the
 *   API stays stopped, also across an engine restart;
 * - bounded json-file logs (the services log into ~/logs; this is pod-init's own output).
 * So the pod's writes are bounded everywhere: its home by the qgroup, the read-only root not at all
 * writable, the tmpfs mounts by their sizes (and the memory limit), the log by its rotation.
 */
export function resourcesOf(limits: PodLimits) {
  const memory = limits.memoryMb * 1024 * 1024;
  return {
    Memory: memory,
    MemorySwap: memory,
    NanoCpus: Math.round(limits.cpu * 1e9),
    PidsLimit: limits.pids,
  };
}

const MB = 1024 * 1024;

export function containerCreateOptions(prefix: string, spec: PodSpec, image: string): ContainerCreateOptions {
  const names = podNames(prefix, spec.name);
  const tmpfs: Record<string, string> = {
    "/run/pod": `rw,exec,nosuid,nodev,uid=1000,gid=1000,mode=0755,size=${128 * MB}`,
    "/tmp": `rw,nosuid,nodev,mode=1777,size=${512 * MB}`,
    "/var/tmp": `rw,nosuid,nodev,mode=1777,size=${64 * MB}`,
  };
  if (spec.preset === "php")
    tmpfs["/var/lib/php/sessions"] = `rw,noexec,nosuid,nodev,mode=1733,size=${64 * MB}`;
  return {
    name: names.container,
    Image: image,
    Hostname: spec.name,
    User: "1000:1000",
    WorkingDir: `${HOME}/app`,
    Labels: {
      ...podLabels(prefix, spec.name, spec.podId),
      [LABEL_DOMAIN]: spec.domain,
      [LABEL_PORT]: String(spec.port),
      [LABEL_SSH_PORT]: String(spec.sshPort),
    },
    StopTimeout: 10,
    HostConfig: {
      ...POD_ISOLATION,
      Tmpfs: tmpfs,
      ...resourcesOf(spec.limits),
      OomScoreAdj: 500,
      Mounts: [
        {
          Type: "volume",
          Source: names.volume,
          Target: HOME,
          ReadOnly: false,
        },
      ],
      NetworkMode: names.network,
      PortBindings: {},
      PublishAllPorts: false,
      RestartPolicy: { Name: "unless-stopped" },
      LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
    },
    NetworkingConfig: { EndpointsConfig: { [names.network]: {} } },
  };
}

/**
 * A container that is created, used for one `putArchive`, removed, and never started: it holds a
 * clone's new home volume without the image's seeding (NoCopy) on a writable root, so an archive of
 * the source's `pod_user/` can be extracted at /home — which also sets the volume root's owner, an
 * entry Docker skips when extracting at the volume itself. (The pod container's root is read-only.)
 */
export function cloneHelperOptions(prefix: string, spec: PodSpec, image: string): ContainerCreateOptions {
  const names = podNames(prefix, spec.name);
  return {
    name: helperName(names.container, "clone"),
    Image: image,
    User: "1000:1000",
    Cmd: ["true"],
    Labels: podLabels(prefix, spec.name, spec.podId),
    NetworkDisabled: true,
    HostConfig: {
      CapDrop: ["ALL"],
      SecurityOpt: POD_SECURITY_OPT,
      NetworkMode: "none",
      Mounts: [
        {
          Type: "volume",
          Source: names.volume,
          Target: HOME,
          ReadOnly: false,
          VolumeOptions: { NoCopy: true, Labels: {}, DriverConfig: { Name: "local", Options: {} } },
        },
      ],
    },
  };
}
