/**
 * bench/scale's table (the floor size beside the fleet, their ratios) and its verdicts: per-request
 * figures within 1.2× of the floor, the metrics ingest sustained, every agent connected.
 */
import { fmt, formatTable, median, summarize } from "../stats";
import { AGENTS, TARGET, v } from "./settings";
import type { PhaseResult } from "./stand";

interface Row {
  measure: string;
  floor: number;
  fleet: number;
  unit: string;
  decimals: number;
  /** per-request figure: fleet ≤ 1.2 × floor ("up" for rates: fleet ≥ floor / 1.2) */
  ratioTarget?: "down" | "up";
  /**
   * Figures taken round by round, the two sizes back to back: the ratio is the median of the rounds'
   * ratios (slow drift of the machine cancels within a pair), not the ratio of the medians.
   */
  paired?: { floor: number[]; fleet: number[] };
}

const pairedRatio = ({ floor, fleet }: { floor: number[]; fleet: number[] }) =>
  median(floor.map((f, i) => (fleet[i] ?? Number.NaN) / f).filter((x) => !Number.isNaN(x)));

export function report(floor: PhaseResult, fleet: PhaseResult): void {
  const p = (xs: number[], q: number) => summarize(xs)[q === 50 ? "p50" : "p99"];
  const rows: Row[] = [
    {
      measure: "agents connected",
      floor: floor.connected,
      fleet: fleet.connected,
      unit: "",
      decimals: 0,
    },
    {
      measure: "connect → welcome p50",
      floor: p(floor.connectMs, 50),
      fleet: p(fleet.connectMs, 50),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "connect → welcome p99",
      floor: p(floor.connectMs, 99),
      fleet: p(fleet.connectMs, 99),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "GET /api/pods p50 (median of rounds)",
      floor: median(floor.listP50),
      fleet: median(fleet.listP50),
      unit: "ms",
      decimals: 2,
      ratioTarget: "down",
      paired: { floor: floor.listP50, fleet: fleet.listP50 },
    },
    {
      measure: "GET /api/pods p99 (median of rounds)",
      floor: median(floor.listP99),
      fleet: median(fleet.listP99),
      unit: "ms",
      decimals: 2,
      ratioTarget: "down",
      paired: { floor: floor.listP99, fleet: fleet.listP99 },
    },
    {
      measure: "GET /api/pods throughput",
      floor: median(floor.listRps),
      fleet: median(fleet.listRps),
      unit: "req/s",
      decimals: 0,
    },
    {
      measure: "create → admitted (202) p50 (median of rounds)",
      floor: median(floor.admittedRoundP50),
      fleet: median(fleet.admittedRoundP50),
      unit: "ms",
      decimals: 1,
      ratioTarget: "down",
      paired: { floor: floor.admittedRoundP50, fleet: fleet.admittedRoundP50 },
    },
    {
      measure: "create → admitted (202) p99",
      floor: p(floor.admittedMs, 99),
      fleet: p(fleet.admittedMs, 99),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "create → host told (Workflow's pod.create) p50",
      floor: median(floor.hostToldMs),
      fleet: median(fleet.hostToldMs),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "heartbeat round trip at cadence p50",
      floor: median(floor.cadenceRttMs),
      fleet: median(fleet.cadenceRttMs),
      unit: "ms",
      decimals: 2,
    },
    {
      measure: "heartbeat ingest, closed loop",
      floor: floor.heartbeatsPerSecond,
      fleet: fleet.heartbeatsPerSecond,
      unit: "/s",
      decimals: 0,
      ratioTarget: "up",
    },
    {
      measure: "heartbeat round trip, closed loop p50",
      floor: median(floor.heartbeatRttMs),
      fleet: median(fleet.heartbeatRttMs),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "heartbeat round trip, closed loop p99",
      floor: p(floor.heartbeatRttMs, 99),
      fleet: p(fleet.heartbeatRttMs, 99),
      unit: "ms",
      decimals: 1,
    },
    {
      measure: "metrics offered",
      floor: floor.metrics.offeredPerSecond,
      fleet: fleet.metrics.offeredPerSecond,
      unit: "samples/s",
      decimals: 0,
    },
    {
      measure: "metrics ingested (sent → landed)",
      floor: floor.metrics.ingestPerSecond,
      fleet: fleet.metrics.ingestPerSecond,
      unit: "samples/s",
      decimals: 0,
    },
    {
      measure: "metrics backlog after the last send",
      floor: floor.metrics.drainMs,
      fleet: fleet.metrics.drainMs,
      unit: "ms",
      decimals: 0,
    },
    {
      measure: "workerd RSS, agents connected",
      floor: floor.workerd.rssConnectedMb,
      fleet: fleet.workerd.rssConnectedMb,
      unit: "MB",
      decimals: 0,
    },
    {
      measure: "workerd RSS peak",
      floor: floor.workerd.peakMb,
      fleet: fleet.workerd.peakMb,
      unit: "MB",
      decimals: 0,
    },
  ];
  for (const part of ["connect", "api", "heartbeat", "metrics"] as const) {
    rows.push({
      measure: `workerd CPU during ${part}`,
      floor: floor.workerd.cpu[part],
      fleet: fleet.workerd.cpu[part],
      unit: "% core",
      decimals: 0,
    });
  }
  const judged: (() => void)[] = [];
  const table = rows.map((r) => {
    const ratio = r.paired ? pairedRatio(r.paired) : r.fleet / r.floor;
    let verdict = "";
    if (r.ratioTarget) {
      verdict = `${r.ratioTarget === "down" ? "≤" : "≥"} ${r.ratioTarget === "down" ? TARGET.ratio : fmt(1 / TARGET.ratio)}×`;
      // a paired ratio (per-request, fleet over floor in the same rounds) is judged as it is
      const x = r.paired
        ? { figure: `${r.measure} (paired ratio)`, ours: ratio, floor: 1, unit: "" }
        : { figure: r.measure, ours: r.fleet, floor: r.floor, unit: r.unit };
      judged.push(() =>
        r.ratioTarget === "down"
          ? v.ratio({ ...x, target: TARGET.ratio })
          : v.atLeast({ ...x, target: Number(fmt(1 / TARGET.ratio)) }),
      );
    }
    return [
      r.measure,
      `${fmt(r.floor, r.decimals)} ${r.unit}`.trim(),
      `${fmt(r.fleet, r.decimals)} ${r.unit}`.trim(),
      Number.isFinite(ratio) ? `${fmt(ratio)}x` : "-",
      verdict,
    ];
  });
  console.log(
    `\n${formatTable(
      [
        "measure",
        `${floor.size.label} (floor)`,
        fleet.size.label,
        "ratio",
        "target (per-request: ≤ 1.2× the floor)",
      ],
      table,
    )}`,
  );

  console.log(
    `\nmetrics at ${fleet.size.label}: ${fleet.metrics.sent} samples in ${fleet.metrics.messages} messages, ` +
      `${fleet.metrics.landed} landed; at ${floor.size.label}: ${floor.metrics.sent} in ${floor.metrics.messages}, ${floor.metrics.landed} landed`,
  );
  for (const r of [floor, fleet]) {
    if (r.connectErrors.length || r.droppedAgents) {
      const kinds = new Map<string, number>();
      for (const e of r.connectErrors) kinds.set(e, (kinds.get(e) ?? 0) + 1);
      console.log(
        `${r.size.label}: ${r.connectErrors.length} connects failed (${[...kinds].map(([e, n]) => `${n}× ${e}`).join("; ")}), ${r.droppedAgents} agents dropped later`,
      );
    }
    console.log(
      `${r.size.label}: bench process CPU (its ${AGENTS} sockets and HTTP clients) api ${fmt(r.benchCpu.api, 0)}%, heartbeat ${fmt(r.benchCpu.heartbeat, 0)}%, metrics ${fmt(r.benchCpu.metrics, 0)}% of a core`,
    );
  }
  console.log("");
  for (const judge of judged) judge();
  v.absolute({
    figure: "metrics ingest sustained (1,000 hosts × 50 pods a minute)",
    value: fleet.metrics.ingestPerSecond,
    limit: TARGET.metricsPerSecond,
    direction: "at least",
    unit: "samples/s",
  });
  v.absolute({
    figure: "metrics samples sent but not landed",
    value: Math.max(0, fleet.metrics.sent - fleet.metrics.landed),
    limit: 0,
    unit: "",
  });
  v.absolute({
    figure: "agents connected at once (the fewer of both phases)",
    value: Math.min(AGENTS, fleet.connected, floor.connected),
    limit: TARGET.agents,
    direction: "at least",
    unit: "",
  });
}
