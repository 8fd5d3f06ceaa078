/**
 * Log history bench (issue #29 item 4): searching a range of a pod's log history, on real Docker.
 *
 *   tsx bench/logs.ts [--lines 1000000] [--days 3] [--reps 5]
 *
 * A pod of the Launch plan (1 CPU: the search runs on the pod's own share, in the pod). `--lines` lines of a web log (~110 bytes each, every one different) are written into a pod's
 * history on the host (`<state dir>/logs/<pod>/web/<day>.gz`, 24 chunks a day, as the collector
 * appends them), spread over `--days` past days. Then, taking turns each repetition:
 *
 * - ours: `pod.logs` with `since`/`until` over all those days and a pattern that matches one line in
 *   10,000 (so every line is searched; `lines=1000` is never reached), through the agent's handler:
 *   the agent's zlib decompresses the chunks into the pod, where `grep -P` runs (agent/inside/history.ts;
 *   the warm-up read starts the pod's command helper, which the later reads' collections use);
 * - floor: `gzip -dc <the same .gz files> | grep -a -P -i <the same pattern>` on the host;
 * - shown: `grep -P` over the same lines uncompressed (what grep alone costs).
 *
 * Verdicts: ours ≤ 1.5× the floor, and ≤ 2 s for 1,000,000 lines (the issue's promise; only shown,
 * not judged, when the floor itself took longer than that on a busy machine). Everything
 * is removed at the end, also on failure.
 */
import { spawn } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { dayOf } from "../agent/inside/history";
import { findPlan } from "../shared/catalog";
import { podSpec, startAgent } from "../test/agent/helpers";
import { limitsOf } from "../worker/services/pods/spec";
import { fmt, median } from "./stats";
import { positiveInt } from "./support/args";
import { interleaved, machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const { values: args } = parseArgs({
  options: {
    lines: { type: "string", default: "1000000" },
    days: { type: "string", default: "3" },
    reps: { type: "string", default: "5" },
  },
});
const LINES = positiveInt("lines", args.lines);
const DAYS = positiveInt("days", args.days);
const REPS = positiveInt("reps", args.reps);
const CHUNKS_PER_DAY = 24;
const DAY = 86_400_000;
const POD = "logbench";
/** one line in 10,000 has it */
const PATTERN = "status=5\\d\\d .*needle";

const v = verdicts("logs");

function line(i: number): string {
  const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const needle = i % 10_000 === 7 ? " needle" : "";
  const status = i % 10_000 === 7 ? 503 : 200 + (i % 7);
  return `${ip} - - [${i}] "GET /items/${(i * 7919) % 100_003}?q=${i.toString(36)} HTTP/1.1" status=${status} ${i % 4096}${needle}`;
}

/** runs `sh -c script` on the host, resolves with its stdout's line count */
function run(script: string, ...argv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", script, "sh", ...argv], { stdio: ["ignore", "pipe", "inherit"] });
    let count = 0;
    child.stdout.on("data", (b: Buffer) => {
      for (const byte of b) if (byte === 0x0a) count++;
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 || code === 1 ? resolve(count) : reject(new Error(`exit ${code}`)),
    );
  });
}

async function main() {
  console.log(`log history: ${LINES} lines over ${DAYS} days, ${REPS} reps; ${machineLoad()}`);
  const agent = await startAgent();
  try {
    // the smallest plan's pod: the search runs on the pod's own CPU (its plan's share)
    const launch = findPlan("launch");
    if (!launch) throw new Error("no Launch plan");
    const limits = { ...limitsOf(launch), logDays: 30, logMb: 1024 };
    await agent.handlers["pod.create"](podSpec(POD, { limits }), agent.ctx);
    const dir = join(agent.stateDir, "logs", POD, "web");
    const plain = join(agent.stateDir, "bench-plain");
    await mkdir(dir, { recursive: true });
    await mkdir(plain, { recursive: true });
    const now = Date.now();
    const perDay = Math.ceil(LINES / DAYS);
    const gzFiles: string[] = [];
    const plainFiles: string[] = [];
    let written = 0;
    let expected = 0;
    for (let d = DAYS; d >= 1; d--) {
      const dayStart = now - d * DAY;
      const day = dayOf(dayStart);
      const members: Buffer[] = [];
      const index: string[] = [];
      const texts: string[] = [];
      let offset = 0;
      const n = Math.min(perDay, LINES - written);
      for (let c = 0; c < CHUNKS_PER_DAY; c++) {
        const from = written + Math.floor((n * c) / CHUNKS_PER_DAY);
        const to = written + Math.floor((n * (c + 1)) / CHUNKS_PER_DAY);
        const lines: string[] = [];
        for (let i = from; i < to; i++) {
          lines.push(line(i));
          if (i % 10_000 === 7) expected++;
        }
        const text = `${lines.join("\n")}\n`;
        texts.push(text);
        const member = gzipSync(text);
        const at = dayStart + Math.floor((DAY * (c + 1)) / (CHUNKS_PER_DAY + 1));
        index.push(`${at - 3_600_000} ${at} ${offset} ${member.length} ${Buffer.byteLength(text)}`);
        offset += member.length;
        members.push(member);
      }
      written += n;
      await writeFile(join(dir, `${day}.gz`), Buffer.concat(members));
      await writeFile(join(dir, `${day}.idx`), `${index.join("\n")}\n`);
      await writeFile(join(plain, `${day}.log`), texts.join(""));
      gzFiles.unshift(join(dir, `${day}.gz`));
      plainFiles.unshift(join(plain, `${day}.log`));
    }
    console.log(`written: ${written} lines, ${expected} of them match`);

    const since = now - (DAYS + 1) * DAY;
    let oursFound = 0;
    const times = await interleaved(
      {
        ours: async () => {
          const r = await agent.handlers["pod.logs"](
            { name: POD, source: "web", lines: 1000, grep: PATTERN, since, until: now },
            agent.ctx,
          );
          if (r.truncated) throw new Error("the bench's search was truncated");
          oursFound = r.lines.length;
        },
        floor: () => run('p=$1; shift; gzip -dc -- "$@" | grep -a -P -i -e "$p"', PATTERN, ...gzFiles),
        plain: () => run('p=$1; shift; grep -h -a -P -i -e "$p" -- "$@"', PATTERN, ...plainFiles),
      },
      REPS,
      1,
    );
    if (oursFound !== Math.min(expected, 1000)) {
      throw new Error(`ours found ${oursFound} lines, ${expected} expected`);
    }
    const [ours, floor, plainMs] = [
      median(times.ours ?? []),
      median(times.floor ?? []),
      median(times.plain ?? []),
    ];
    console.log(
      `medians: ours ${fmt(ours, 0)} ms, gzip -dc | grep -P ${fmt(floor, 0)} ms, grep -P on plain text ${fmt(plainMs, 0)} ms`,
    );
    // The promise is judged when the bare tools keep it themselves; when the machine is so busy that
    // the floor alone is over 2 s, no code could, and it is shown beside the ratio (bench/support/verdict.ts).
    const promise = {
      figure: `search ${LINES} lines over ${DAYS} days`,
      value: ours * (1_000_000 / LINES),
      limit: 2000,
      unit: "ms per 1M lines",
    };
    if (floor * (1_000_000 / LINES) <= 2000) v.absolute({ ...promise, promise: true });
    else v.shown(promise);
    v.ratio({ figure: "search beside gzip -dc | grep -P", ours, floor, target: 1.5, unit: "ms" });
    v.shown({ figure: "grep -P over the same lines uncompressed", value: plainMs, limit: ours, unit: "ms" });
  } finally {
    await agent.cleanup();
    await rm(join(agent.stateDir), { recursive: true, force: true });
  }
  v.finish();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
