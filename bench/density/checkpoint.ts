/**
 * One bench/density checkpoint at a pod count: create (ours and the floor's in turns), the pod list
 * beside the engine's, memory per pod, and the agent at idle.
 */
import { prefixFilter } from "../../agent/docker/naming";
import type { Plan } from "../../shared/catalog";
import type { ApiClient } from "../../test/e2e/support/api";
import { type Stack, sleep } from "../../test/e2e/support/stack";
import { timed } from "../support/sampling";
import { cgroupMemory, type Floor } from "./floor";
import { type Idle, idleWindow, meminfoMb } from "./machine";
import { createOne, type PodList } from "./pods";
import { docker, LIST_REPS, PROBES, run } from "./settings";

export interface Checkpoint {
  pods: number;
  create: number[];
  floorCreate: number[];
  list20: number[];
  list100: number[];
  floorList: number[];
  cliList: number[];
  memPerPodMb: number;
  floorMemPerPodMb: number;
  availableDropPerPodMb: number;
  idle: Idle;
}

export async function measure(
  stack: Stack,
  api: ApiClient,
  floor: Floor,
  plan: Plan,
  next: () => string,
  availableAtStart: number,
): Promise<Checkpoint> {
  // create: ours and the floor's in turns
  const create: number[] = [];
  const floorCreate: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    if (i % 2 === 0) {
      create.push(await createOne(api, next()));
      floorCreate.push(await floor.create(plan));
    } else {
      floorCreate.push(await floor.create(plan));
      create.push(await createOne(api, next()));
    }
  }
  const pods = (await api.get<PodList>("/api/pods?limit=1")).body.status_counts.running ?? 0;

  // list: the API's pages beside the engine's own list of the same containers
  const list20: number[] = [];
  const list100: number[] = [];
  const floorList: number[] = [];
  const cliList: number[] = [];
  const filters = prefixFilter(stack.prefix);
  for (let i = 0; i < LIST_REPS + 2; i++) {
    const variants: [number[], () => Promise<unknown>][] = [
      [list20, () => api.get("/api/pods")],
      [list100, () => api.get("/api/pods?limit=100")],
      [floorList, () => docker.listContainers({ all: true, filters })],
      [cliList, () => run("docker", ["ps", "-a", "--filter", `label=podhost.prefix=${stack.prefix}`])],
    ];
    for (let j = 0; j < variants.length; j++) {
      const [samples, fn] = variants[(i + j) % variants.length] as [number[], () => Promise<unknown>];
      const ms = await timed(fn);
      if (i >= 2) samples.push(ms); // two rounds of warm-up
    }
  }

  // memory: ours (idle a while) and the floor's (fresh: their page cache is still warm) per container
  const ours = await cgroupMemory(stack.prefix);
  const theirs = await cgroupMemory(floor.prefix);
  await floor.removeAll();
  // settle: the last creates' work, the engine's and nginx's reloads
  await sleep(5_000);
  const available = await meminfoMb("MemAvailable");
  const idle = await idleWindow(stack.agent.child.pid ?? 0);
  return {
    pods,
    create,
    floorCreate,
    list20,
    list100,
    floorList,
    cliList,
    memPerPodMb: ours.mb / Math.max(1, ours.count),
    floorMemPerPodMb: theirs.mb / Math.max(1, theirs.count),
    availableDropPerPodMb: (availableAtStart - available) / Math.max(1, pods),
    idle,
  };
}
