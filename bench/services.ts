/**
 * Database service bench (issue #13): service install → running, per type, beside a bare
 * container of the same image brought to ready on the same machine in the same run.
 *
 *   tsx bench/services.ts [--reps 3]
 *
 * What runs: the agent's host half without the Worker — `service.install` called directly on the
 * agent's handler table (as test/agent/services.test.ts does) for a pod created before the clock
 * starts, on the real Docker engine and the host's pod disk (the data volume is a btrfs subvolume
 * charged to the pod's qgroup). The Worker's share (route → workflow → HostAgent DO → agent) is
 * not in these figures. Ours: from the call until it answers (svc-init has waited until the server
 * accepts connections). Floor: a bare `docker run` of the same image (plain named volume, same
 * tmpfs mounts, no pod, no subvolume, no memory split) + `svc-init` until ready, with dockerode.
 * After each repetition the service is removed (`service.remove`) and the floor's container and
 * volume deleted. Target: ours ≤ 1.3× the floor, per type, on the medians (issue #30 item 2: a ratio
 * to the same run's floor; it was ≤ 3 s).
 *
 * Everything made here is removed at the end, also on failure or Ctrl-C.
 */
import { parseArgs } from "node:util";
import { execInContainer } from "../agent/docker/exec";
import type { ServiceType } from "../shared/protocol/services";
import { type Agent, podSpec, startAgent } from "../test/agent/helpers";
import { median } from "./stats";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET_RATIO = 1.3;
const v = verdicts("services");
const TYPES: ServiceType[] = ["postgresql", "mysql", "redis"];
const PW = "BenchPassword-0123456789";
const limits = { cpu: 1, memoryMb: 1024, diskGb: 5, pids: 256 };

const { values } = parseArgs({ options: { reps: { type: "string", default: "3" } } });
const reps = Math.max(1, Number(values.reps) || 3);

let agent: Agent | undefined;
const floorNames: string[] = [];

async function floorOnce(a: Agent, type: ServiceType, i: number): Promise<number> {
  const name = `${a.config.namePrefix}-floor-${type}-${i}`;
  floorNames.push(name);
  const t0 = performance.now();
  const c = await a.docker.createContainer({
    name,
    Image: a.config.serviceImages[type],
    User: "1000:1000",
    Labels: { "podhost.prefix": a.config.namePrefix },
    HostConfig: {
      Init: true,
      CapDrop: ["ALL"],
      ReadonlyRootfs: true,
      Tmpfs: { "/run/svc": "rw,uid=1000,gid=1000,mode=0700,size=16m", "/tmp": "rw,mode=1777,size=64m" },
      Mounts: [{ Type: "volume", Source: name, Target: "/var/lib/svc" }],
    },
  });
  await c.start();
  const r = await execInContainer(a.docker, name, ["/opt/podhost/bin/svc-init"], { stdin: `${PW}\n` });
  const took = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`floor ${type}: ${r.stderr.trim()}`);
  await c.remove({ force: true });
  await a.docker.getVolume(name).remove();
  return took;
}

async function oursOnce(a: Agent, pod: string, type: ServiceType): Promise<number> {
  const t0 = performance.now();
  await a.handlers["service.install"]({ name: pod, type, password: PW, limits }, a.ctx);
  const took = performance.now() - t0;
  await a.handlers["service.remove"]({ name: pod, type, limits }, a.ctx);
  return took;
}

async function main() {
  console.log(`services bench: ${reps} repetitions per type; machine at start: ${machineLoad()}`);
  agent = await startAgent();
  const pod = podSpec("benchsvc", { limits });
  await agent.handlers["pod.create"](pod, agent.ctx);
  for (const type of TYPES) {
    const ours: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < reps; i++) {
      // alternate which goes first, so neither always meets a warmer page cache
      if (i % 2 === 0) {
        ours.push(await oursOnce(agent, pod.name, type));
        floor.push(await floorOnce(agent, type, i));
      } else {
        floor.push(await floorOnce(agent, type, i));
        ours.push(await oursOnce(agent, pod.name, type));
      }
    }
    v.ratio({
      figure: `${type} install → running vs bare docker run → ready`,
      ours: median(ours),
      floor: median(floor),
      target: TARGET_RATIO,
      unit: "ms",
    });
  }
  console.log(`machine at end: ${machineLoad()}`);
  v.finish();
}

async function cleanup() {
  if (!agent) return;
  for (const n of floorNames) {
    await agent.docker
      .getContainer(n)
      .remove({ force: true })
      .catch(() => undefined);
    await agent.docker
      .getVolume(n)
      .remove()
      .catch(() => undefined);
  }
  await agent.cleanup();
  agent = undefined;
}

process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));
main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
