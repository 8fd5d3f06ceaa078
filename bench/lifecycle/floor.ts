/**
 * bench/lifecycle's floor: the pod's container made, stopped and started by hand, with dockerode (the
 * client the agent uses) and with the docker CLI, from the agent's own `containerCreateOptions`.
 */
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ContainerCreateOptions } from "dockerode";
import { containerCreateOptions } from "../../agent/docker/container-spec";
import { HOME, podLabels, podNames } from "../../agent/docker/naming";
import { specFileEntries } from "../../agent/docker/spec-files";
import { buildTar } from "../../agent/docker/tar";
import { findPlan } from "../../shared/catalog";
import type { PodSpec } from "../../shared/protocol";
import { podSpec } from "../../worker/services/pods/spec";
import { removePrefixed } from "../support/floor-cleanup";
import { httpStatus, until } from "../support/probe";
import { docker, IMAGE, now, PAGE_POLL_MS, POD_DOMAIN, run } from "./settings";

/** What the API would hand the agent for a static launch pod; the floors build their containers from it. */
function floorSpec(name: string): PodSpec {
  const plan = findPlan("launch");
  if (!plan) throw new Error("launch plan missing from the catalog");
  return podSpec({
    podId: "pod_benchfloor",
    name,
    sshPort: 22999,
    preset: "static",
    plan,
    podDomain: POD_DOMAIN,
  });
}

/** The CLI takes a seccomp profile as a file where the API takes the JSON itself. */
function cliSecurityOpt(opt: string): string {
  if (!opt.startsWith("seccomp=")) return opt;
  const file = path.join(tmpdir(), `podhost-bench-seccomp-${process.pid}.json`);
  writeFileSync(file, opt.slice("seccomp=".length));
  process.once("exit", () => rmSync(file, { force: true }));
  return `seccomp=${file}`;
}

/** CLI flags for the container `containerCreateOptions` describes (derived from it, so they stay in step). */
function cliRunArgs(o: ContainerCreateOptions): string[] {
  const h = o.HostConfig ?? {};
  const flag = (name: string, value: unknown) => (value === undefined ? [] : [name, String(value)]);
  return [
    "run",
    "-d",
    ...flag("--name", o.name),
    ...flag("--hostname", o.Hostname),
    ...flag("--user", o.User),
    ...flag("--workdir", o.WorkingDir),
    ...(h.Init ? ["--init"] : []),
    ...((h.CapDrop ?? []) as string[]).flatMap((c) => ["--cap-drop", c]),
    ...((h.SecurityOpt ?? []) as string[]).flatMap((s) => ["--security-opt", cliSecurityOpt(s)]),
    ...(h.ReadonlyRootfs ? ["--read-only"] : []),
    ...Object.entries(h.Tmpfs ?? {}).flatMap(([p, opts]) => ["--tmpfs", `${p}:${opts}`]),
    ...flag("--memory", h.Memory),
    ...flag("--memory-swap", h.MemorySwap),
    ...flag("--cpus", h.NanoCpus === undefined ? undefined : h.NanoCpus / 1e9),
    ...flag("--pids-limit", h.PidsLimit),
    ...flag("--oom-score-adj", h.OomScoreAdj),
    ...flag("--network", h.NetworkMode),
    ...(h.Mounts ?? []).flatMap((m) => ["--mount", `type=volume,src=${m.Source},dst=${m.Target}`]),
    ...flag("--ipc", h.IpcMode),
    ...flag("--restart", h.RestartPolicy?.Name),
    ...flag("--log-driver", h.LogConfig?.Type),
    ...Object.entries(h.LogConfig?.Config ?? {}).flatMap(([k, v]) => ["--log-opt", `${k}=${v}`]),
    ...flag("--stop-timeout", o.StopTimeout),
    ...Object.entries(o.Labels ?? {}).flatMap(([k, v]) => ["--label", `${k}=${v}`]),
    o.Image ?? IMAGE,
  ];
}

export interface FloorSteps {
  network: number;
  volume: number;
  create: number;
  putArchive: number;
  start: number;
  ip: number;
  port: number;
  /** network … port, without putArchive (the agent's files are product work, not Docker's) */
  total: number;
}

/** The floor objects live under their own prefix, so the agent's event watcher never sees them. */
export class Floor {
  readonly prefix: string;
  constructor(stackPrefix: string) {
    this.prefix = `${stackPrefix}fl`;
  }

  names(pod: string) {
    return podNames(this.prefix, pod);
  }

  private async network(pod: string) {
    await docker.createNetwork({
      Name: this.names(pod).network,
      Driver: "bridge",
      CheckDuplicate: true,
      Labels: podLabels(this.prefix, pod, "pod_benchfloor"),
      Options: { "com.docker.network.bridge.enable_icc": "true" },
    });
  }

  private async ipOf(pod: string): Promise<string> {
    const info = await docker.getContainer(this.names(pod).container).inspect();
    const ip = info.NetworkSettings.Networks[this.names(pod).network]?.IPAddress;
    if (!ip) throw new Error(`floor container ${pod} has no address`);
    return ip;
  }

  /** Network, volume, container, start, web port answering: each step timed, with dockerode. */
  async createWithDockerode(pod: string): Promise<FloorSteps> {
    const n = this.names(pod);
    const spec = floorSpec(pod);
    const t0 = now();
    await this.network(pod);
    const t1 = now();
    await docker.createVolume({ Name: n.volume, Driver: "local", Labels: podLabels(this.prefix, pod, "x") });
    const t2 = now();
    await docker.createContainer(containerCreateOptions(this.prefix, spec, IMAGE));
    const t3 = now();
    await docker.getContainer(n.container).putArchive(buildTar(specFileEntries(spec)), { path: HOME });
    const t4 = now();
    await docker.getContainer(n.container).start();
    const t5 = now();
    const ip = await this.ipOf(pod);
    const t6 = now();
    const t7 = await until(
      `${pod} port`,
      async () => (await httpStatus(ip, spec.port)) === 200,
      PAGE_POLL_MS,
    );
    return {
      network: t1 - t0,
      volume: t2 - t1,
      create: t3 - t2,
      putArchive: t4 - t3,
      start: t5 - t4,
      ip: t6 - t5,
      port: t7 - t6,
      total: t7 - t0 - (t4 - t3),
    };
  }

  /** The same with the docker CLI: `network create`, `volume create`, `run -d`, then the port. */
  async createWithCli(pod: string): Promise<{ run: number; total: number }> {
    const n = this.names(pod);
    const spec = floorSpec(pod);
    const labels = Object.entries(podLabels(this.prefix, pod, "x")).flatMap(([k, v]) => [
      "--label",
      `${k}=${v}`,
    ]);
    const t0 = now();
    await run("docker", ["network", "create", ...labels, n.network]);
    await run("docker", ["volume", "create", ...labels, n.volume]);
    const t1 = now();
    await run("docker", cliRunArgs(containerCreateOptions(this.prefix, spec, IMAGE)));
    const t2 = now();
    const ip = await this.cliIp(pod);
    const t3 = await until(
      `${pod} port`,
      async () => (await httpStatus(ip, spec.port)) === 200,
      PAGE_POLL_MS,
    );
    return { run: t2 - t1, total: t3 - t0 };
  }

  private async cliIp(pod: string): Promise<string> {
    const n = this.names(pod);
    const { stdout } = await run("docker", [
      "inspect",
      "--format",
      `{{(index .NetworkSettings.Networks "${n.network}").IPAddress}}`,
      n.container,
    ]);
    return stdout.trim();
  }

  async stopWithDockerode(pod: string): Promise<number> {
    const t0 = now();
    await docker.getContainer(this.names(pod).container).stop({ t: 10 });
    return now() - t0;
  }

  async startWithDockerode(pod: string): Promise<number> {
    const t0 = now();
    await docker.getContainer(this.names(pod).container).start();
    const ip = await this.ipOf(pod);
    return (await until(`${pod} port`, async () => (await httpStatus(ip, 8080)) === 200, PAGE_POLL_MS)) - t0;
  }

  async stopWithCli(pod: string): Promise<number> {
    const t0 = now();
    await run("docker", ["stop", "-t", "10", this.names(pod).container]);
    return now() - t0;
  }

  async startWithCli(pod: string): Promise<number> {
    const t0 = now();
    await run("docker", ["start", this.names(pod).container]);
    const ip = await this.cliIp(pod);
    return (await until(`${pod} port`, async () => (await httpStatus(ip, 8080)) === 200, PAGE_POLL_MS)) - t0;
  }

  /** Container, volume and network of one floor pod, whatever state they are in. */
  async remove(pod: string) {
    const n = this.names(pod);
    const quiet = () => undefined;
    await docker.getContainer(n.container).remove({ force: true }).catch(quiet);
    await docker.getVolume(n.volume).remove().catch(quiet);
    await docker.getNetwork(n.network).remove().catch(quiet);
  }

  /** Everything left under the floor prefix (after a failure half-way). */
  removeAll() {
    return removePrefixed(docker, this.prefix);
  }
}
