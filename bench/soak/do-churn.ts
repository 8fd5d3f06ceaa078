/**
 * What the local runtime (workerd under Miniflare, as wrangler dev runs it) keeps per Durable Object
 * instance, with no code of ours: a bare Worker whose SQLite-backed Durable Object answers one call and
 * stores nothing, created `--instances` times under fresh names (as worker/durable-objects/
 * transfer-relay names one per file transfer). Printed every `--step` instances: workerd's RSS, the
 * Worker isolate's JS heap after a garbage collection, the SQLite files on disk and those workerd
 * holds open; then the same after `--idle-s` with no traffic (the instances evicted). RSS that grows
 * with the instances while the heap stays flat is the local runtime's native memory. `--kind workflow`
 * does the same with a bare one-step Workflow's instances, each run to its end (as the pod-create,
 * pod-deploy, pod-backup… Workflows of worker/workflows/ each make one per operation).
 *
 *   tsx bench/soak/do-churn.ts [--kind object|workflow] [--instances 3000] [--rounds 1] [--step 500]
 *     [--idle-s 30]
 */
import { mkdtemp, readdir, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import { fmt, formatTable } from "../stats";
import { positiveInt } from "../support/args";
import { descendants, machineLoad, readProcess } from "../support/sampling";
import { openWorkerHeap } from "./heap";

const { values: args } = parseArgs({
  options: {
    instances: { type: "string", default: "3000" },
    step: { type: "string", default: "500" },
    "idle-s": { type: "string", default: "30" },
    kind: { type: "string", default: "object" },
    rounds: { type: "string", default: "1" },
  },
});
if (args.kind !== "object" && args.kind !== "workflow")
  throw new Error(`--kind: object or workflow, got ${args.kind}`);
const KIND = args.kind;
const ROUNDS = positiveInt("rounds", args.rounds);
const INSTANCES = positiveInt("instances", args.instances);
const STEP = positiveInt("step", args.step);
const IDLE_S = positiveInt("idle-s", args["idle-s"]);

const script = `
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
export class Relay extends DurableObject {
  async fetch() { return new Response("ok"); }
}
export class Flow extends WorkflowEntrypoint {
  async run(event, step) { return step.do("one", async () => "done"); }
}
export default {
  async fetch(request, env) {
    const name = new URL(request.url).searchParams.get("name");
    if (new URL(request.url).pathname === "/workflow") {
      const instance = await env.FLOW.create({ id: name });
      for (let i = 0; i < 200; i++) {
        const { status } = await instance.status();
        if (status === "complete" || status === "errored") return new Response(status);
        await new Promise((r) => setTimeout(r, 10));
      }
      return new Response("not ended", { status: 500 });
    }
    return env.RELAY.get(env.RELAY.idFromName(name)).fetch(request);
  },
};`;

async function openSqliteFiles(pid: number, dir: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    if (target.startsWith(dir) && target.endsWith(".sqlite")) n++;
  }
  return n;
}

async function main() {
  console.log(`do-churn: ${INSTANCES} ${KIND} instances; ${machineLoad()}`);
  const persist = await mkdtemp(path.join(tmpdir(), "podhost-do-churn-"));
  const before = new Set((await descendants()).map((p) => p.pid));
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: "2026-04-20", // wrangler.toml's
    durableObjects: { RELAY: { className: "Relay", useSQLite: true } },
    durableObjectsPersist: persist,
    workflows: { FLOW: { name: "flow", className: "Flow" } },
    workflowsPersist: persist,
    inspectorPort: 0,
  });
  try {
    const url = await mf.ready;
    const workerd = (await descendants()).find((p) => p.comm === "workerd" && !before.has(p.pid))?.pid;
    if (workerd === undefined) throw new Error("workerd not found");
    const inspector = await mf.getInspectorURL();
    const heap = await openWorkerHeap(`http://${inspector.host}`);
    const rows: string[][] = [];
    const reading = async (label: string, made: number) => {
      const rssMb = (await readProcess(workerd)).rssKb / 1024;
      const heapMb = (await heap.usedAfterGc()) / 1048576;
      const files = (await readdir(persist, { recursive: true })).filter((f) => f.endsWith(".sqlite")).length;
      rows.push([
        label,
        String(made),
        fmt(rssMb, 1),
        fmt(heapMb, 2),
        String(files),
        String(await openSqliteFiles(workerd, persist)),
      ]);
      console.log(rows[rows.length - 1]?.join("  "));
    };
    await reading("start", 0);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = round * INSTANCES; i < (round + 1) * INSTANCES; i++) {
        const path = KIND === "workflow" ? "workflow" : "";
        const res = await fetch(`${url}${path}?name=i${i}-${crypto.randomUUID()}`);
        if (!res.ok) throw new Error(`instance ${i}: ${res.status} ${await res.text()}`);
        await res.text();
        if ((i + 1) % STEP === 0) await reading("made", i + 1);
      }
      // what stays once every instance is evicted; more rounds show whether it keeps growing
      await new Promise((r) => setTimeout(r, IDLE_S * 1000));
      await reading(`idle ${IDLE_S} s`, (round + 1) * INSTANCES);
    }
    heap.close();
    console.log(
      `\n${formatTable(["when", "instances", "workerd RSS MB", "JS heap MB", "SQLite files", "held open"], rows)}`,
    );
    const first = Number(rows[0]?.[2]);
    const last = Number(rows[rows.length - 1]?.[2]);
    console.log(
      `\nworkerd RSS per instance: ${fmt(((last - first) * 1024) / (INSTANCES * ROUNDS), 1)} KB; ${machineLoad()}`,
    );
  } finally {
    await mf.dispose();
    await rm(persist, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
