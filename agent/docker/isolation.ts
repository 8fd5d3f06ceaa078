import type { HostConfig } from "dockerode";
import { POD_SECURITY_OPT } from "./seccomp";

/**
 * What every long-lived container made from a pod's image or a service image gets, whatever its job
 * (the pod, its database sidecars, a deploy's build and candidate, a backup's box, a stopped pod's
 * helper): no privileges and no capabilities, the pods' seccomp profile with no-new-privileges, a
 * read-only root, its own IPC namespace, tini as PID 1. Each adds its own limits, mounts and
 * network. One place, so a hardening step reaches all of them (test/agent/spec-files.test.ts lists
 * the files allowed to give containers the pods' profile).
 */
export const POD_ISOLATION: HostConfig = {
  Privileged: false,
  Init: true,
  CapDrop: ["ALL"],
  CapAdd: [],
  SecurityOpt: POD_SECURITY_OPT,
  ReadonlyRootfs: true,
  IpcMode: "private",
};
