/**
 * Imports bench (issue #15): an import until its page is served, beside the bare work it cannot
 * avoid, measured in the same run on the real stack (Worker in workerd + agent + Docker + nginx).
 *
 *   tsx bench/imports.ts [--reps 3] [--pages 20]
 *
 * 1. paste → page served: POST /api/imports with a pasted HTML page, then the pod's address (the
 *    ingress, Host header) polled every 20 ms until it answers the pasted page. Floor: POST /api/pods
 *    (static) polled the same way until the pod's own page answers — the create every import rides on.
 * 2. site snapshot → served: POST /api/imports `{url, mode: "site", max_pages}` of a `--pages`-page
 *    site on 127.0.0.1 (test/support/import-site.ts), polled until the snapshot's index answers.
 *    Floor: the same pages and their image fetched by Node (6 at a time, as the Worker does), plus
 *    the POST /api/pods create of (1), timed back to back.
 * Target: ours ≤ 1.3× the floor, for both. Variants take turns in rotating order; medians are
 * compared. Prints MET / NOT MET and exits non-zero when a target is missed. Everything made here is
 * removed at the end (the stack's containers, volumes and networks, by its prefix).
 */
import { parseArgs } from "node:util";
import { type ApiClient, signUp } from "../test/e2e/support/api";
import { type Stack, sleep, startStack } from "../test/e2e/support/stack";
import { httpGet } from "../test/support/http";
import { startImportSiteDouble } from "../test/support/import-site";
import { fmt, formatTable, median } from "./stats";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET_RATIO = 1.3;
const v = verdicts("imports");

const { values: args } = parseArgs({
  options: { reps: { type: "string", default: "3" }, pages: { type: "string", default: "20" } },
});
const REPS = Number(args.reps);
const PAGES = Number(args.pages);
if (!Number.isInteger(REPS) || REPS <= 0)
  throw new Error(`--reps: expected a positive integer, got ${args.reps}`);
if (!Number.isInteger(PAGES) || PAGES < 2 || PAGES > 200)
  throw new Error(`--pages: expected 2-200, got ${args.pages}`);

const now = () => performance.now();
let counter = 0;
const podName = (tag: string) => `bimp-${tag}-${Date.now().toString(36).slice(-5)}${++counter}`;

async function servedWithin(
  stack: Stack,
  name: string,
  expected: string,
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await httpGet(stack.edgePort, `${name}.pods.localhost`).catch(() => ({
      status: 0,
      body: "",
    }));
    if (r.status === 200 && r.body.includes(expected)) return;
    if (Date.now() > deadline) throw new Error(`${name} did not serve "${expected}" within ${timeoutMs} ms`);
    await sleep(20);
  }
}

async function accepted(api: ApiClient, path: string, body: unknown): Promise<string> {
  const res = await api.post(path, body);
  if (res.status !== 202)
    throw new Error(`${path} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  return (res.body.pod?.name ?? res.body.name) as string;
}

async function main(): Promise<void> {
  const site = await startImportSiteDouble();
  const stack = await startStack("bimp");
  const made: string[] = [];
  try {
    const { api } = await signUp(stack.api, "Imports Bench");
    for (let i = 0; ; i++) {
      const regions = await api.get("/api/regions");
      if (regions.body.regions?.some((r: { available: boolean }) => r.available)) break;
      if (i > 600) throw new Error("the host never came online");
      await sleep(100);
    }
    const siteUrl = `${site.url}/many/?pages=${PAGES}`;
    const pageUrls = [
      siteUrl,
      ...Array.from({ length: PAGES - 1 }, (_, i) => `${site.url}/many/p${i + 1}?pages=${PAGES}`),
      `${site.url}/site/logo.png`,
    ];

    const createPod = async () => {
      const name = podName("f");
      made.push(name);
      const started = now();
      await accepted(api, "/api/pods", { name, preset: "static" });
      await servedWithin(stack, name, "<");
      return now() - started;
    };
    const variants: Record<string, () => Promise<number>> = {
      "floor: create": createPod,
      "paste import": async () => {
        const marker = `pasted-${counter}`;
        const started = now();
        const name = await accepted(api, "/api/imports", {
          paste: { body: `<!doctype html><title>Bench</title><h1>${marker}</h1>` },
          name: podName("p"),
        });
        made.push(name);
        await servedWithin(stack, name, marker);
        return now() - started;
      },
      "floor: fetch + create": async () => {
        const started = now();
        for (let i = 0; i < pageUrls.length; i += 6)
          await Promise.all(pageUrls.slice(i, i + 6).map(async (u) => (await fetch(u)).arrayBuffer()));
        const fetched = now() - started;
        return fetched + (await createPod());
      },
      [`site snapshot (${PAGES} pages)`]: async () => {
        const started = now();
        const name = await accepted(api, "/api/imports", {
          url: siteUrl,
          mode: "site",
          max_pages: PAGES,
          name: podName("s"),
        });
        made.push(name);
        await servedWithin(stack, name, "Many pages");
        return now() - started;
      },
    };
    const names = Object.keys(variants);
    const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (let rep = 0; rep < REPS; rep++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(rep + k) % names.length] as string;
        samples[name]?.push(await (variants[name] as () => Promise<number>)());
      }
      // keep the host's pod count flat between repetitions
      while (made.length > 0) await api.delete(`/api/pods/${made.pop()}`);
    }
    const m = (n: string) => median(samples[n] ?? []);
    console.log(`imports bench: ${REPS} repetition(s), ${machineLoad()}`);
    console.log(
      formatTable(
        ["variant", "median ms", "samples ms"],
        names.map((n) => [n, fmt(m(n), 0), (samples[n] ?? []).map((s) => fmt(s, 0)).join(" ")]),
      ),
    );
    // where an import's extra time goes: the agent's own `pod.create` time (its log lines, which
    // include unpacking the archive and the reload) against the plain creates'; the rest is the
    // control plane's (the artifact, its staging in R2, the workflow's steps)
    const createMs = (kind: string) =>
      median(
        stack.agent.output
          .join("")
          .split("\n")
          .flatMap((line) => {
            if (!line.includes('"command done"') || !line.includes('"op":"pod.create"')) return [];
            try {
              const j = JSON.parse(line) as { pod?: string; ms?: number };
              return j.pod?.includes(`-${kind}-`) && typeof j.ms === "number" ? [j.ms] : [];
            } catch {
              return [];
            }
          }),
      );
    const [agentFloor, agentPaste] = [createMs("f"), createMs("p")];
    if (Number.isFinite(agentFloor) && Number.isFinite(agentPaste))
      console.log(
        `profile (p50): the paste import's extra ${fmt(m("paste import") - m("floor: create"), 0)} ms = the agent's pod.create ${fmt(agentPaste, 0)} vs ${fmt(agentFloor, 0)} ms (+${fmt(agentPaste - agentFloor, 0)}: the archive unpacked, the app reloaded) and the control plane's +${fmt(m("paste import") - m("floor: create") - (agentPaste - agentFloor), 0)} ms`,
      );
    v.ratio({
      figure: "paste import → page served vs create → page",
      ours: m("paste import"),
      floor: m("floor: create"),
      target: TARGET_RATIO,
      unit: "ms",
    });
    v.ratio({
      figure: `site snapshot of ${PAGES} pages → served vs fetch + create`,
      ours: m(`site snapshot (${PAGES} pages)`),
      floor: m("floor: fetch + create"),
      target: TARGET_RATIO,
      unit: "ms",
    });
    v.finish();
  } finally {
    await stack.stop();
    await site.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
