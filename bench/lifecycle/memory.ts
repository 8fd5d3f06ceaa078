/**
 * bench/lifecycle part 4: the host filled to `--pods` pods through the API, `--parallel` at a time, then
 * the agent's memory (and the round trip again) with them running.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { sleep, waitFor } from "../../test/e2e/support/stack";
import { httpGet } from "../../test/support/http";
import { fmt, formatTable } from "../stats";
import { readProcess } from "../support/sampling";
import { type Bench, type Memory, p50, p90 } from "./bench";
import { measurePing, printPing } from "./ping";
import { docker, mb, now, PARALLEL, PINGS, POD_DOMAIN, PODS, TARGET, v } from "./settings";

/** What the API, the engine, the ingress and the agent's log say about a pod that did not come up. */
async function diagnose(b: Bench, name: string): Promise<string> {
  const pod = await b.api.get(`/api/pods/${name}`);
  const events = await b.api.get(`/api/pods/${name}/events`);
  const eventLines = (events.body?.events ?? []).map(
    (e: { type: string; message: string }) => `${e.type}: ${e.message}`,
  );
  const container = await docker
    .getContainer(`${b.stack.prefix}-${name}`)
    .inspect()
    .then((i) => JSON.stringify(i.State), String);
  const vhost = path.join(b.stack.agentEnv.PODHOST_STATE_DIR ?? "", "nginx", "vhosts", `${name}.conf`);
  const page = await httpGet(b.stack.edgePort, `${name}.${POD_DOMAIN}`).catch(String);
  const log = b.stack.agent.output
    .join("")
    .split("\n")
    .filter((l) => l.includes(name) || l.includes('"level":"error"') || l.includes('"level":"warn"'))
    .slice(-15);
  return [
    `API: ${pod.status} ${JSON.stringify(pod.body)}`,
    `events: ${JSON.stringify(eventLines)}`,
    `container state: ${container}`,
    `vhost file: ${await readFile(vhost, "utf8").then(
      () => "present",
      () => "missing",
    )}`,
    `page: ${JSON.stringify(page)}`,
    "agent log:",
    ...log,
  ].join("\n");
}

/** 4. the host filled to `PODS` pods through the API, `PARALLEL` at a time; then the agent's memory. */
export async function fillPhase(b: Bench, idle: { connected: Memory; beforePods: Memory }): Promise<void> {
  const wanted = Math.max(0, PODS - b.pods.length);
  const times: number[] = [];
  const t0 = now();
  let claimed = 0;
  /** why the host took no more pods (a create that ended in `error`), if it came to that */
  let full: string | undefined;
  const creator = async () => {
    while (claimed < wanted && !full) {
      claimed++;
      const name = `lc-f${String(claimed).padStart(2, "0")}`;
      const t = now();
      const res = await b.api.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
      if (res.status !== 202) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      const failed = await waitUp(b, name);
      if (failed) {
        full ??= `${name}: ${failed}`;
        const removed = await b.api.delete(`/api/pods/${name}`);
        if (removed.status !== 200) throw new Error(`delete ${name}: ${removed.status}`);
        return;
      }
      times.push(now() - t);
      b.pods.push(name);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, wanted) }, creator));
  const made = times.length;
  const seconds = (now() - t0) / 1000;
  await waitFor("every pod to be running in the API", async () => {
    const list = await b.api.get("/api/pods?limit=100");
    return list.body?.status_counts?.running === b.pods.length ? true : undefined;
  });
  const filters = { label: [`podhost.prefix=${b.stack.prefix}`], status: ["running"] };
  const running = (await docker.listContainers({ filters })).length;
  await sleep(2_000); // the create bursts' garbage gets a chance to be collected before the reading
  const memory = await readProcess(b.agentPid);
  const pingFull = await measurePing(b.stack, Math.min(PINGS, 200));

  console.log(
    `\n4. agent memory: ${made} pods created ${PARALLEL} at a time in ${fmt(seconds, 1)} s ` +
      `(${fmt((made / seconds) * 60, 0)} pods/min; POST → page answers p50 ${p50(times)} ms, ` +
      `p90 ${p90(times)} ms); ${running} pod containers running`,
  );
  if (full) console.log(`HOST FULL before ${PODS} pods: ${full}`);
  const memRow = (label: string, m: Memory) => [label, fmt(mb(m.rssKb), 1), fmt(mb(m.hwmKb), 1)];
  console.log(
    `\n${formatTable(
      ["agent process (node dist/agent/main.js)", "VmRSS MB", "VmHWM MB"],
      [
        memRow("idle: just connected", idle.connected),
        memRow("idle: before the first pod (after the pings)", idle.beforePods),
        memRow(`${running} running pods`, memory),
      ],
    )}`,
  );
  console.log(`\nround trip again with ${running} pods running:\n`);
  printPing(pingFull);
  if (running < TARGET.rssPods) {
    console.log(
      `\nthe RSS target is for ${TARGET.rssPods} running pods: ${running} ran ` +
        `(${PODS < TARGET.rssPods ? `--pods ${PODS}` : "see above"}), so it is NOT MET`,
    );
  }
  v.absolute({
    figure:
      running >= TARGET.rssPods
        ? `agent RSS with ${running} running pods`
        : `agent RSS with ${running} running pods (${fmt(mb(memory.rssKb), 1)} MB; the target is with ${TARGET.rssPods})`,
    // fewer pods than the target names cannot pass
    value: running >= TARGET.rssPods ? mb(memory.rssKb) : Number.NaN,
    limit: TARGET.rssMb,
    unit: "MB",
  });
}

/**
 * Until the pod's page answers (undefined) or its create ended in `error` (the reason, from its events).
 * The page is polled every 50 ms, the API every second.
 */
async function waitUp(b: Bench, name: string): Promise<string | undefined> {
  const deadline = now() + 120_000;
  for (let i = 0; now() < deadline; i++) {
    const page = await httpGet(b.stack.edgePort, `${name}.${POD_DOMAIN}`).catch(() => null);
    if (page?.status === 200) return undefined;
    if (i % 20 === 19 && (await b.api.get(`/api/pods/${name}`)).body?.status === "error") {
      const events = await b.api.get(`/api/pods/${name}/events?type=error`);
      return events.body?.events?.[0]?.message ?? "status error";
    }
    await sleep(50);
  }
  throw new Error(`${name} did not come up within 120 s\n${await diagnose(b, name)}`);
}
