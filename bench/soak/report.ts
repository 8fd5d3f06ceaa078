/**
 * bench/soak's report: per kind the count, outcomes and times; every 5xx, unanswered request and
 * failure; the samples' slopes over the last two thirds of the run; and the soak's verdicts.
 */
import { fmt, formatTable, summarize } from "../stats";
import { machineLoad } from "../support/sampling";
import { atS, failures, KINDS, type KindStats, notEnded, progress, serverErrors, stats } from "./records";
import { type Sample, slope } from "./samples";
import { FLAT, JOURNAL_RETENTION_MS, MIN_SAMPLES_TO_JUDGE, TENANTS, v } from "./settings";

export function report(samples: Sample[]) {
  const load = machineLoad();
  console.log(
    `\nsoak: ${fmt(atS() / 60, 1)} min, ${TENANTS} tenants, ${progress.requests} requests; ${load}\n`,
  );
  const rows = KINDS.map((k) => {
    const s = stats.get(k) as KindStats;
    const sum = summarize(s.ms);
    return [
      k,
      String(s.ok + s.failed + s.notEnded + s.refused429),
      String(s.ok),
      String(s.failed),
      String(s.notEnded),
      String(s.refused429),
      fmt(sum.p50, 0),
      fmt(sum.p99, 0),
    ];
  });
  console.log(formatTable(["kind", "count", "ok", "error", "not ended", "429", "p50 ms", "p99 ms"], rows));

  console.log(`\n5xx and unanswered requests: ${serverErrors.length}`);
  for (const e of serverErrors) {
    console.log(
      `  ${fmt(e.atS, 0)} s ${e.method} ${e.path} → ${e.status}${e.hostAway ? " (host away)" : ""}: ${e.body}`,
    );
  }
  console.log(`operations that ended in error: ${failures.length}`);
  for (const f of failures) console.log(`  ${fmt(f.atS, 0)} s tenant ${f.tenant} ${f.kind}: ${f.reason}`);
  console.log(`operations not ended: ${notEnded.length}`);
  for (const n of notEnded) console.log(`  tenant ${n.tenant} ${n.kind}: ${n.what}`);

  // flatness over the last two thirds of the run
  const endMin = samples[samples.length - 1]?.atMin ?? 0;
  const window = samples.filter((s) => s.atMin >= endMin / 3);
  const judged = window.length >= MIN_SAMPLES_TO_JUDGE;
  console.log(
    `\nsamples (${samples.length}; the slope over the ${window.length} of the last two thirds, ${judged ? "judged" : `too few to judge (< ${MIN_SAMPLES_TO_JUDGE})`}):`,
  );
  console.log(
    formatTable(
      [
        "min",
        "agent RSS MB",
        "workerd RSS MB",
        "Worker JS heap MB",
        "runtime's JS heaps MB",
        "HostAgent storage MB",
        "local storage MB",
      ],
      samples.map((s) => [
        fmt(s.atMin, 1),
        fmt(s.agentMb, 1),
        fmt(s.workerdMb, 1),
        fmt(s.heapMb, 1),
        fmt(s.runtimeHeapMb, 1),
        fmt(s.hostAgentMb, 2),
        fmt(s.persistMb, 1),
      ]),
    ),
  );
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (first && last?.runtimeHeaps.size) {
    console.log("\nthe local runtime's isolates, JS heap after GC, first → last sample:");
    for (const [id, end] of last.runtimeHeaps)
      console.log(`  ${id}: ${fmt(first.runtimeHeaps.get(id) ?? Number.NaN, 1)} → ${fmt(end, 1)} MB`);
  }
  const slopeOf = (pick: (s: Sample) => number) => slope(window.map((s) => ({ x: s.atMin, y: pick(s) })));
  const flat = (figure: string, value: number, limit: number) =>
    judged
      ? v.absolute({ figure, value, limit, unit: "MB/min" })
      : v.shown({ figure, value, limit, unit: "MB/min" });

  console.log("");
  const hostAway = serverErrors.filter((e) => e.hostAway).length;
  const unanswered = serverErrors.filter((e) => e.status === 0).length;
  v.absolute({
    figure: "5xx answers (host-away 503s apart)",
    value: serverErrors.length - hostAway - unanswered,
    limit: 0,
    unit: "",
  });
  v.absolute({
    figure: "requests without an answer (connection closed, refused)",
    value: unanswered,
    limit: 0,
    unit: "",
  });
  v.shown({ figure: "documented 503s while a host is away", value: hostAway, limit: 0, unit: "" });
  v.absolute({ figure: "operations not ended", value: notEnded.length, limit: 0, unit: "" });
  v.absolute({ figure: "operations ended in error", value: failures.length, limit: 0, unit: "" });
  const refused = [...stats.values()].reduce((s, k) => s + k.refused429, 0);
  v.shown({ figure: "operations refused 429 (the bench's pacing)", value: refused, limit: 0, unit: "" });
  flat(
    "agent RSS slope",
    slopeOf((s) => s.agentMb),
    FLAT.agentRssMbPerMin,
  );
  // What of workerd is ours is the Worker isolate's heap (module state, Durable Objects' in-memory
  // state, caches): judged. workerd's RSS adds the local runtime's native memory (the local storage's
  // SQLite page caches, its allocator), which says nothing about production: shown beside it.
  flat(
    "Worker JS heap slope (after GC)",
    slopeOf((s) => s.heapMb),
    FLAT.workerHeapMbPerMin,
  );
  v.shown({
    figure: "workerd RSS slope (the local runtime's memory with it)",
    value: slopeOf((s) => s.workerdMb),
    limit: FLAT.workerdRssMbPerMin,
    unit: "MB/min",
  });
  v.shown({
    figure: "the local runtime's JS heaps slope (D1, R2, Workflows engines…)",
    value: slopeOf((s) => s.runtimeHeapMb),
    limit: FLAT.workerHeapMbPerMin,
    unit: "MB/min",
  });
  v.shown({
    figure: "local storage slope (every SQLite file of the persist directory)",
    value: slopeOf((s) => s.persistMb),
    limit: 0,
    unit: "MB/min",
  });
  // The journal keeps settled commands JOURNAL_RETENTION_MS (an hour) before its alarm prunes them:
  // the storage grows by design until then, so its slope is judged only over samples taken after it.
  const afterRetention = window.filter((s) => s.atMin >= JOURNAL_RETENTION_MS / 60_000 + 1);
  const storageSlope = slope(afterRetention.map((s) => ({ x: s.atMin, y: s.hostAgentMb })));
  if (afterRetention.length >= MIN_SAMPLES_TO_JUDGE) {
    v.absolute({
      figure: "HostAgent storage slope after the journal's retention",
      value: storageSlope,
      limit: FLAT.hostAgentStorageMbPerMin,
      unit: "MB/min",
    });
  } else {
    console.log(
      `HostAgent storage: not judged, the run is shorter than the journal's ${JOURNAL_RETENTION_MS / 60_000}-minute retention + ${MIN_SAMPLES_TO_JUDGE} samples (it grows by design until then)`,
    );
    v.shown({
      figure: "HostAgent storage slope (within the journal's retention)",
      value: slopeOf((s) => s.hostAgentMb),
      limit: FLAT.hostAgentStorageMbPerMin,
      unit: "MB/min",
    });
  }
  const ops = [...stats.values()].reduce((s, k) => s + k.ok + k.failed + k.notEnded + k.refused429, 0);
  v.absolute({ figure: "operations run", value: ops, limit: 1, unit: "", direction: "at least" });
  v.finish();
}
