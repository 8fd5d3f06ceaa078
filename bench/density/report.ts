/**
 * bench/density's table per pod count (each figure beside its floor, measured in the same run) and its
 * verdicts: ≥ 300 idle static pods, the agent under 2% CPU at idle at the largest count.
 */
import { fmt, formatTable, median } from "../stats";
import type { Checkpoint } from "./checkpoint";
import type { Idle } from "./machine";
import { IDLE_S, INTERVAL_S, TARGET, v } from "./settings";

export function report(
  checkpoints: Checkpoint[],
  emptyIdle: Idle,
  bareRss: number,
  outcome: { realCapacityPods: number; placementStop: string; stop: string; reached: number },
) {
  const ratio = (a: number, b: number) => `${fmt(a / b, 2)}x`;
  console.log("\nper pod count (medians; floors measured in the same run)\n");
  const rows: string[][] = [];
  for (const c of checkpoints) {
    const at = `${c.pods} pods`;
    const cm = median(c.create);
    const fm = median(c.floorCreate);
    rows.push([
      at,
      "create → running (API)",
      fmt(cm, 0),
      "bare dockerode create+start+port",
      fmt(fm, 0),
      ratio(cm, fm),
    ]);
    const fl = median(c.floorList);
    rows.push([
      at,
      "GET /api/pods (20 per page)",
      fmt(median(c.list20), 1),
      "dockerode list",
      fmt(fl, 1),
      ratio(median(c.list20), fl),
    ]);
    rows.push([
      at,
      "GET /api/pods?limit=100",
      fmt(median(c.list100), 1),
      "dockerode list",
      fmt(fl, 1),
      ratio(median(c.list100), fl),
    ]);
    rows.push([at, "", "", "`docker ps -a` (context)", fmt(median(c.cliList), 1), ""]);
    rows.push([
      at,
      "cgroup memory per pod, MB",
      fmt(c.memPerPodMb, 1),
      "bare container, same image",
      fmt(c.floorMemPerPodMb, 1),
      ratio(c.memPerPodMb, c.floorMemPerPodMb),
    ]);
    rows.push([at, "MemAvailable drop per pod, MB", fmt(c.availableDropPerPodMb, 1), "", "", ""]);
    rows.push([
      at,
      `agent CPU at idle, % of a core (${IDLE_S} s)`,
      fmt(c.idle.cpuPercent, 2),
      "agent, empty host",
      fmt(emptyIdle.cpuPercent, 2),
      "",
    ]);
    rows.push([
      at,
      "agent RSS at idle, MB",
      fmt(c.idle.rssMb, 1),
      "bare idle node",
      fmt(bareRss, 1),
      ratio(c.idle.rssMb, bareRss),
    ]);
    rows.push([
      at,
      "dockerd CPU, same window (context)",
      fmt(c.idle.dockerdPercent, 2),
      "empty host",
      fmt(emptyIdle.dockerdPercent, 2),
      "",
    ]);
  }
  console.log(formatTable(["", "measure", "ours (ms | MB | %)", "floor", "floor value", "ratio"], rows));
  console.log(
    `\nagent on the empty host: CPU ${fmt(emptyIdle.cpuPercent, 2)}%, RSS ${fmt(emptyIdle.rssMb, 1)} MB`,
  );

  const last = checkpoints.at(-1);
  console.log(
    `\npods: ${outcome.reached} (with the machine's own capacity registered: ${outcome.realCapacityPods}, then ${outcome.placementStop}; overcommitted: stopped by ${outcome.stop})`,
  );
  if (last) {
    console.log(
      `agent CPU at idle: ${fmt(last.idle.cpuPercent, 2)}% at ${last.pods} pods (empty host ${fmt(emptyIdle.cpuPercent, 2)}%; metrics every ${INTERVAL_S} s)\n`,
    );
  }
  v.absolute({
    figure: "idle static pods on this machine",
    value: outcome.reached,
    limit: TARGET.pods,
    direction: "at least",
    unit: "pods",
  });
  v.absolute({
    figure: `agent CPU at idle with ${last?.pods ?? 0} pods`,
    value: last ? last.idle.cpuPercent : Number.NaN,
    limit: TARGET.agentCpuPercent,
    unit: "%",
  });
  v.finish();
}
