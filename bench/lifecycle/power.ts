/**
 * bench/lifecycle part 2: stop and start through the API beside `stop` / `start` of an equivalent
 * container with dockerode and with the CLI, start until the web port answers.
 */
import { formatTable, median } from "../stats";
import { type Api, type Bench, interleaved, pageAnswers, row } from "./bench";
import { now, PAGE_POLL_MS, REPS, TARGET, v } from "./settings";

/** POST /stop or /start; ms until it answered (once the host confirmed). */
async function power(api: Api, name: string, action: "stop" | "start"): Promise<number> {
  const t0 = now();
  const res = await api.post(`/api/pods/${name}/${action}`);
  const ms = now() - t0;
  const want = action === "stop" ? "stopped" : "running";
  if (res.status !== 200 || res.body?.status !== want) {
    throw new Error(`${action} ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return ms;
}

/** 2. stop and start through the API beside dockerode and the CLI on an equivalent container. */
export async function powerPhase(b: Bench): Promise<void> {
  const pod = b.pods[0];
  if (!pod) throw new Error("no pod to stop and start");
  const floorPod = "ss";
  await b.floor.createWithDockerode(floorPod);
  const stops = { api: [] as number[], dockerode: [] as number[], cli: [] as number[] };
  const starts = {
    api: [] as number[],
    page: [] as number[],
    dockerode: [] as number[],
    cli: [] as number[],
  };
  const stopBefore = b.agentLog.count("pod.stop");
  const startBefore = b.agentLog.count("pod.start");
  await interleaved(
    [
      async (timed) => {
        const stop = await power(b.api, pod, "stop");
        const t = now();
        const start = await power(b.api, pod, "start");
        const page = (await pageAnswers(b.stack, pod, PAGE_POLL_MS)) - t;
        if (!timed) return;
        stops.api.push(stop);
        starts.api.push(start);
        starts.page.push(page);
      },
      async (timed) => {
        const stop = await b.floor.stopWithDockerode(floorPod);
        const start = await b.floor.startWithDockerode(floorPod);
        if (!timed) return;
        stops.dockerode.push(stop);
        starts.dockerode.push(start);
      },
      async (timed) => {
        const stop = await b.floor.stopWithCli(floorPod);
        const start = await b.floor.startWithCli(floorPod);
        if (!timed) return;
        stops.cli.push(stop);
        starts.cli.push(start);
      },
    ],
    REPS,
  );
  await b.floor.remove(floorPod);
  const stopFloor = median(stops.dockerode);
  const startFloor = median(starts.dockerode);
  console.log(`\n2. stop and start, ${REPS} reps after 1 warm-up (start: until the web port answers 200)\n`);
  console.log(
    formatTable(
      ["path", "n", "p50 ms", "p90 ms", "vs dockerode"],
      [
        row("API: POST /stop answered", stops.api, stopFloor),
        row("dockerode: stop({t: 10})", stops.dockerode, stopFloor),
        row("CLI: docker stop -t 10", stops.cli, stopFloor),
        row("agent: pod.stop command (its log)", b.agentLog.since("pod.stop", stopBefore + 1), stopFloor),
        row("API: POST /start answered", starts.api, startFloor),
        row("API: POST /start → page answers via ingress", starts.page, startFloor),
        row("dockerode: start() → port 200", starts.dockerode, startFloor),
        row("CLI: docker start → port 200", starts.cli, startFloor),
        row("agent: pod.start command (its log)", b.agentLog.since("pod.start", startBefore + 1), startFloor),
      ],
    ),
  );
  v.ratio({
    figure: "stop (API) vs dockerode",
    ours: median(stops.api),
    floor: stopFloor,
    target: TARGET.power,
    unit: "ms",
  });
  v.ratio({
    figure: "start (API) vs dockerode → port",
    ours: median(starts.api),
    floor: startFloor,
    target: TARGET.power,
    unit: "ms",
  });
}
