/**
 * bench/density's floor: bare-engine pods made with dockerode from the agent's own create options, and
 * the cgroup memory of a prefix's containers (ours and the floor's).
 */
import { containerCreateOptions } from "../../agent/docker/container-spec";
import { HOME, podLabels, podNames, prefixFilter } from "../../agent/docker/naming";
import { specFileEntries } from "../../agent/docker/spec-files";
import { buildTar } from "../../agent/docker/tar";
import { readContainerCgroup } from "../../agent/metrics/cgroup";
import type { Plan } from "../../shared/catalog";
import { sleep } from "../../test/e2e/support/stack";
import { podSpec } from "../../worker/services/pods/spec";
import { removePrefixed } from "../support/floor-cleanup";
import { httpStatus } from "../support/probe";
import { docker, IMAGE, MB, now } from "./settings";

/** Bare-engine pods under their own prefix (the agent never sees them): the floors of create and memory. */
export class Floor {
  readonly prefix: string;
  private made = 0;
  constructor(stackPrefix: string) {
    this.prefix = `${stackPrefix}fl`;
  }

  /** Network, volume, container (the agent's own create options), start, web port answers; ms. */
  async create(plan: Plan): Promise<number> {
    const pod = `f${++this.made}`;
    const n = podNames(this.prefix, pod);
    const spec = podSpec({
      podId: "pod_benchfloor",
      name: pod,
      sshPort: 22999,
      preset: "static",
      plan,
      podDomain: "pods.localhost",
    });
    const labels = podLabels(this.prefix, pod, "pod_benchfloor");
    const t0 = now();
    await docker.createNetwork({ Name: n.network, Driver: "bridge", CheckDuplicate: true, Labels: labels });
    await docker.createVolume({ Name: n.volume, Driver: "local", Labels: labels });
    await docker.createContainer(containerCreateOptions(this.prefix, spec, IMAGE));
    // the pod's files, as the agent writes them (untimed, as in bench/lifecycle: product work, not Docker's)
    const t1 = now();
    await docker.getContainer(n.container).putArchive(buildTar(specFileEntries(spec)), { path: HOME });
    const files = now() - t1;
    await docker.getContainer(n.container).start();
    const info = await docker.getContainer(n.container).inspect();
    const ip = info.NetworkSettings.Networks[n.network]?.IPAddress ?? "";
    while ((await httpStatus(ip, spec.port)) !== 200) {
      if (now() - t0 > 60_000) throw new Error(`floor pod ${pod} does not answer`);
      await sleep(10);
    }
    return now() - t0 - files;
  }

  removeAll(): Promise<void> {
    return removePrefixed(docker, this.prefix);
  }
}

/** Cgroup memory of the running containers of a prefix (as `docker stats` counts it): total MB and count. */
export async function cgroupMemory(prefix: string): Promise<{ mb: number; count: number }> {
  const list = await docker.listContainers({ filters: prefixFilter(prefix) });
  let bytes = 0;
  let count = 0;
  for (const c of list) {
    const info = await docker
      .getContainer(c.Id)
      .inspect()
      .catch(() => null);
    if (!info?.State.Running) continue;
    const r = await readContainerCgroup(info.State.Pid, info.Id).catch(() => null);
    if (!r) continue;
    bytes += r.memoryUsed;
    count++;
  }
  return { mb: bytes / MB, count };
}
