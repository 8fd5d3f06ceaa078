/**
 * Density bench (issue #17 item 5): static pods on one host until the machine says no, on the real
 * stack (Worker in workerd + registered host + the compiled agent + Docker engine + nginx ingress).
 *
 *   tsx bench/density.ts [--max 320] [--batch 10] [--probes 5] [--idle-s 60] [--interval-s 60]
 *                        [--list-reps 20] [--min-available-mb 4096] [--keep-networks 16]
 *
 * 1. Registered capacity: the host is registered with the machine's own CPUs, memory and disk, and
 *    static (launch) pods are created through the API until placement answers 503; which of the
 *    three ran out is reported. An operator who hosts idle static sites overcommits (a launch plan
 *    reserves a whole CPU and 512 MB): the capacity is then raised to hold `--max` pods, and the
 *    filling goes on until one of: `--max`; placement or a create failing (the pod's own error is
 *    shown); the machine running low on memory (MemAvailable under `--min-available-mb` plus the
 *    next batch's estimate: the machine has no swap and is shared, so it stops well before the
 *    kernel would have to kill anything); or the engine's address pools for pod networks (each pod
 *    has its own bridge network) leaving fewer than `--keep-networks` networks for other work.
 * 2. At 50, 200 and the largest count reached:
 *    - create: `--probes` pods made one at a time, POST until the pod list says running, beside the
 *      same container made with bare dockerode (network, volume, create, start, web port answers:
 *      the agent's own create options), interleaved.
 *    - list: `GET /api/pods` (the default page of 20, and `?limit=100`), `--list-reps` times, beside
 *      a dockerode list of the same containers (the floor) and `docker ps` (context).
 *    - memory per pod: the pods' cgroup memory (usage less inactive page cache, as `docker stats`)
 *      summed over the pods, over their count; beside the floor containers' (same image, bare); and
 *      the drop in the host's MemAvailable since the start, per pod (what a pod costs the machine,
 *      containerd's shim, the bridge and the kernel included).
 *    - the agent at idle over `--idle-s` (after the last create settled): its CPU (utime + stime of
 *      the agent and its reaped children, as a share of one core) and its RSS (largest of readings
 *      every 5 s), beside the same agent on the empty host (the floor for CPU; a bare idle `node`
 *      with the agent's flags for RSS). The agent samples its pods every `--interval-s`
 *      (PODHOST_METRICS_INTERVAL_S, production's 60 s by default): with the defaults every idle
 *      window holds one whole metrics and health tick. The engine's (dockerd's) CPU over the same
 *      window is shown for context (other work on the machine uses the engine too).
 *
 * Targets (issue #17): ≥ 300 idle static pods on this machine, and the agent under 2% CPU at idle at
 * the largest count. Prints MET / NOT MET and exits non-zero when a target is missed. Every pod,
 * container, network, volume and pod disk the bench made is removed at the end, also on failure or
 * Ctrl-C; the bench touches only objects under its own name prefix.
 */
import { statfs } from "node:fs/promises";
import { cpus as hostCpus } from "node:os";
import { loadConfig } from "../agent/config";
import { findPlan } from "../shared/catalog";
import { signUp } from "../test/e2e/support/api";
import { waitForHostOnline } from "../test/e2e/support/pods";
import { sleep, startStack } from "../test/e2e/support/stack";
import { type Checkpoint, measure } from "./density/checkpoint";
import { Floor } from "./density/floor";
import { addressPools, bareNodeRss, idleWindow, meminfoMb, networksLeft } from "./density/machine";
import { allRunning, exhausted, hostRow, type PodList, post, setCapacity } from "./density/pods";
import { report } from "./density/report";
import {
  BATCH,
  CHECKPOINTS,
  INTERVAL_S,
  KEEP_NETWORKS,
  MAX,
  MB_PER_POD_ESTIMATE,
  MIN_AVAILABLE_MB,
  now,
  PROBES,
} from "./density/settings";
import { fmt } from "./stats";
import { machineLoad } from "./support/sampling";

async function main() {
  console.log(`at start: ${machineLoad()}`);
  const plan = findPlan("launch");
  if (!plan) throw new Error("launch plan missing from the catalog");
  const stack = await startStack("dens", { direct: true });
  const floor = new Floor(stack.prefix);
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= floor
      .removeAll()
      .catch(() => undefined)
      .then(() => stack.stop());
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    stack.agentEnv.PODHOST_METRICS_INTERVAL_S = String(INTERVAL_S);
    await stack.agent.stop();
    await stack.startAgent();
    const user = await signUp(stack.api, "Density");
    await waitForHostOnline(user.api);
    const api = user.api;
    const pools = await addressPools();
    const availableAtStart = await meminfoMb("MemAvailable");
    const memTotal = await meminfoMb("MemTotal");
    const diskRoot = loadConfig({}).podDiskRoot || "/var/lib/docker";
    const disk = await statfs(diskRoot);
    const real = {
      cpu: hostCpus().length,
      memoryMb: Math.floor(memTotal),
      diskGb: Math.floor((disk.blocks * disk.bsize) / 1024 ** 3),
    };
    console.log(
      `machine: ${real.cpu} CPUs, ${fmt(memTotal / 1024, 1)} GiB (${fmt(availableAtStart / 1024, 1)} GiB available), ` +
        `${real.diskGb} GB pod disk (${diskRoot}), ${await networksLeft(pools)} pod networks left in the engine's pools`,
    );

    // the empty host: the floor of the agent's idle CPU, and its RSS beside a bare node
    await sleep(3_000);
    const emptyIdle = await idleWindow(stack.agent.child.pid ?? 0);
    const bareRss = await bareNodeRss();

    // 1. the machine's own capacity registered
    await setCapacity(stack, real.cpu, real.memoryMb, real.diskGb);
    let made = 0;
    const next = () => `dens-${++made}`;
    let placementStop = `none before --max ${MAX}`;
    while (made < MAX) {
      const name = next();
      const res = await api.post("/api/pods", { name, preset: "static" });
      if (res.status === 503) {
        made--;
        placementStop = `"${typeof res.body?.error === "string" ? res.body.error : JSON.stringify(res.body)}"; out of: ${exhausted(await hostRow(stack), plan)}`;
        break;
      }
      if (res.status !== 202) throw new Error(`POST /api/pods: ${res.status} ${JSON.stringify(res.body)}`);
    }
    await allRunning(api, made);
    const realCapacityPods = made;
    console.log(
      `\nregistered with the machine's capacity (${real.cpu} CPUs, ${real.memoryMb} MB, ${real.diskGb} GB): ` +
        `${realCapacityPods} launch pods placed, then 503: ${placementStop}`,
    );

    // 2. overcommitted to hold --max, filled until something says no
    await setCapacity(stack, MAX * plan.cpu, MAX * plan.memoryMb, MAX * plan.diskGb);
    console.log(`capacity raised to ${MAX} launch pods (cpu ${MAX * plan.cpu}, ${MAX * plan.memoryMb} MB)`);
    const checkpoints: Checkpoint[] = [];
    const t0 = now();
    /** Batches until `count` pods run; null, or what said no. */
    const fillTo = async (count: number): Promise<string | null> => {
      while (made < count) {
        const n = Math.min(BATCH, count - made);
        const available = await meminfoMb("MemAvailable");
        if (available - n * MB_PER_POD_ESTIMATE < MIN_AVAILABLE_MB)
          return `the machine's memory: MemAvailable ${fmt(available, 0)} MB, the bench keeps ${MIN_AVAILABLE_MB} MB`;
        const left = await networksLeft(pools);
        // room kept for the last checkpoint's probes, ours and the floor's (a network each)
        if (left - n < KEEP_NETWORKS + 2 * PROBES)
          return `the engine's address pools: ${left} networks left for pod networks, ${KEEP_NETWORKS} kept for other work (default-address-pools in /etc/docker/daemon.json)`;
        const refused = await post(api, Array.from({ length: n }, next));
        if (refused) return refused;
        try {
          await allRunning(api, made);
        } catch (error) {
          return error instanceof Error ? error.message : String(error);
        }
        process.stdout.write(`\r${made} pods running (${fmt((now() - t0) / 1000, 0)} s)   `);
      }
      return null;
    };
    let stop = `--max ${MAX} reached`;
    let checkpointFailed = false;
    /** A checkpoint, or null when it failed (what failed becomes the reason the filling stopped). */
    const tryMeasure = async () => {
      try {
        return await measure(stack, api, floor, plan, next, availableAtStart);
      } catch (error) {
        stop = `a checkpoint failed: ${error instanceof Error ? error.message : String(error)}`;
        checkpointFailed = true;
        await floor.removeAll().catch(() => undefined);
        return null;
      }
    };
    for (const target of [...CHECKPOINTS.filter((c) => c < MAX), MAX]) {
      const said = await fillTo(target - PROBES);
      if (said) {
        stop = said;
        break;
      }
      console.log(`\n${made + PROBES} pods: measuring`);
      const c = await tryMeasure();
      if (!c) break;
      checkpoints.push(c);
    }
    const reached = (await api.get<PodList>("/api/pods?limit=1")).body.status_counts.running ?? 0;
    console.log(`\n${reached} static pods running; the filling stopped: ${stop}`);
    if (!checkpointFailed && checkpoints.at(-1)?.pods !== reached) {
      // the largest count reached is measured too (the filling stopped between checkpoints)
      console.log(`${reached + PROBES} pods: measuring`);
      const c = await tryMeasure();
      if (c) checkpoints.push(c);
    }

    // the last checkpoint's probes come on top of where the filling stopped
    const most = Math.max(reached, ...checkpoints.map((c) => c.pods));
    report(checkpoints, emptyIdle, bareRss, { realCapacityPods, placementStop, stop, reached: most });
    console.log(`\nat end: ${machineLoad()}`);
  } finally {
    const t = now();
    await cleanup();
    console.log(`cleaned up in ${fmt((now() - t) / 1000, 0)} s`);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
