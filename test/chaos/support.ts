import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { request } from "node:http";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "vitest";
import type { ApiClient } from "../e2e/support/api";
import { waitForPodStatus } from "../e2e/support/pods";
import type { AgentProcess, Stack } from "../e2e/support/stack";
import { sleep, waitFor } from "../e2e/support/stack";
import { httpGet } from "../support/http";

/**
 * What the fault-injection suite (docs/reliability.md) shares: kill points found by observation (a
 * line of the agent's log, a Docker object appearing), never by a delay built into the product, and
 * the counts that show an operation ran at most once and left nothing behind.
 */

const run = promisify(execFile);

/** The agent's log lines (JSON, agent/logger.ts) seen so far, parsed. */
export function agentLines(agent: AgentProcess): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const text of agent.output.join("").split("\n")) {
    try {
      lines.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // a line cut at the end of the output so far, or not ours
    }
  }
  return lines;
}

/**
 * What a failed chaos test prints (its `afterEach`): the agent's lines about the operation (`about`,
 * matched on the message or the op), its connection to the control plane (a reconnect's timing), and
 * each Worker restart's cost (a restart that took minutes reads differently from a step never run).
 */
export function printOnFailure(
  ctx: { task: { result?: { state?: string } } },
  stack: Stack | undefined,
  about: (line: Record<string, unknown>) => boolean,
): void {
  if (ctx.task.result?.state !== "fail" || !stack) return;
  const lines = agentLines(stack.agent).filter(
    (l) => about(l) || /control plane|connected/.test(String(l.msg)),
  );
  console.error(lines.map((l) => JSON.stringify(l)).join("\n"));
  if (stack.restarts.length > 0) console.error(`Worker restarts: ${JSON.stringify(stack.restarts)}`);
}

/** The lines whose message or op matches `pattern` (most files' `about`). */
export const mentioning =
  (pattern: RegExp) =>
  (line: Record<string, unknown>): boolean =>
    pattern.test(String(line.msg)) || pattern.test(String(line.op));

/**
 * Waits until the agent logs `msg` with `fields` (as the host reaches that point of an operation),
 * looking every 20 ms: the kill point of a test, found by observation, not by a delay in the product.
 * `since` (ms since the epoch) skips lines logged before it: an earlier test's run of the same step
 * on the same agent does not count.
 */
export async function agentReaches(
  agent: AgentProcess,
  msg: string,
  fields: Record<string, unknown> = {},
  timeoutMs = 120_000,
  since = 0,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const matches = (line: Record<string, unknown>) =>
    line.msg === msg &&
    Object.entries(fields).every(([k, v]) => line[k] === v) &&
    (since === 0 || Date.parse(String(line.t)) >= since);
  while (Date.now() < deadline) {
    if (agentLines(agent).some(matches)) return;
    if (agent.child.exitCode !== null) throw new Error(`the agent exited before logging "${msg}"`);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for the agent to log "${msg}"`);
}

/** Docker's objects under a host's name prefix (containers of any state, volumes, networks). */
export async function dockerObjects(prefix: string): Promise<{
  containers: string[];
  volumes: string[];
  networks: string[];
}> {
  const list = async (args: string[]) =>
    (await run("docker", args)).stdout
      .split("\n")
      .map((s) => s.trim())
      .filter(Boolean)
      .sort();
  return {
    containers: await list([
      "ps",
      "-a",
      "--format",
      "{{.Names}}",
      "--filter",
      `label=podhost.prefix=${prefix}`,
    ]),
    volumes: await list(["volume", "ls", "-q", "--filter", `name=${prefix}-`]),
    networks: await list(["network", "ls", "--format", "{{.Name}}", "--filter", `name=${prefix}-`]),
  };
}

/** Runs a shell script in the pod through the API (as its owner would), its stdout trimmed. */
export async function podSh(api: ApiClient, pod: string, script: string): Promise<string> {
  const res = await api.post(`/api/pods/${pod}/exec`, { command: ["sh", "-c", script] });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.stdout as string).trim();
}

/** Until a backup is no longer in progress, through the API (which may be away: it is retried). */
export const backupSettled = (api: ApiClient, pod: string, id: string, timeoutMs = 240_000) =>
  waitFor(
    `backup ${id} to settle`,
    async () => {
      const res = await api.get(`/api/pods/${pod}/backups/${id}`);
      return res.body?.status && res.body.status !== "in_progress" ? res.body : undefined;
    },
    timeoutMs,
  );

/** The pod's files, listed with their sizes and hashes (a fingerprint that changes if any byte does). */
export const fingerprint = (api: ApiClient, pod: string) =>
  podSh(
    api,
    pod,
    "cd ~/app && find . -path ./node_modules -prune -o -type f -print0 | sort -z | xargs -0 sha256sum",
  );

/**
 * A new pod `name` (plan `build`) running with the files `script` makes in it (incompressible ones
 * make an operation on them take a moment: long enough to cut it mid-way): its id and the files'
 * fingerprint. `body` adds to the create's request (`server_id`).
 */
export async function podWithFiles(
  api: ApiClient,
  name: string,
  preset: string,
  script: string,
  runningWithinMs = 180_000,
  body: Record<string, unknown> = {},
): Promise<{ id: string; files: string }> {
  const made = await api.post("/api/pods", { name, preset, plan_slug: "build", ...body });
  expect(made.status, JSON.stringify(made.body)).toBe(202);
  expect(made.body.id, JSON.stringify(made.body)).toBeTruthy();
  await waitForPodStatus(api, name, "running", runningWithinMs);
  await podSh(api, name, script);
  return { id: made.body.id as string, files: await fingerprint(api, name) };
}

/** A backup of the pod taken now, once it completed: its id. */
export async function completedBackup(api: ApiClient, pod: string, timeoutMs = 400_000): Promise<string> {
  const made = await api.post(`/api/pods/${pod}/backups`, {});
  expect(made.status, JSON.stringify(made.body)).toBe(202);
  const settled = await backupSettled(api, pod, made.body.id, timeoutMs);
  expect(settled, JSON.stringify(settled)).toMatchObject({ status: "completed" });
  return made.body.id as string;
}

/**
 * After a create-like request's fault: until the new pod `name` is past creating (within
 * `withinMs`), then it is running (else its events are shown), with one `started` event and exactly
 * one container, volume and network more than `objects` (the prefix's Docker objects before it).
 */
export async function endsRunningOnce(
  api: ApiClient,
  prefix: string,
  name: string,
  objects: Awaited<ReturnType<typeof dockerObjects>>,
  withinMs: number,
): Promise<void> {
  const faulted = Date.now();
  const pod = await waitFor(
    `${name} to end`,
    async () => {
      const res = await within(api.get(`/api/pods/${name}`));
      return res.status === 200 && res.body.status !== "creating" && res.body.status !== "pending"
        ? res.body
        : undefined;
    },
    withinMs,
  );
  const said = (await api.get(`/api/pods/${name}/events?limit=20`)).body.events;
  expect(pod, JSON.stringify({ pod, events: said })).toMatchObject({ status: "running" });
  console.info(`${name} ended ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
  expect(await eventCount(api, name, "started")).toBe(1);
  const after = await dockerObjects(prefix);
  const more = (k: "containers" | "volumes" | "networks") => after[k].filter((x) => !objects[k].includes(x));
  expect(more("containers")).toEqual([`${prefix}-${name}`]);
  expect(more("volumes")).toEqual([`${prefix}-${name}-home`]);
  expect(more("networks")).toEqual([`${prefix}-${name}`]);
  expect(after.containers.length).toBe(objects.containers.length + 1);
}

/** Until the pod answers 200 through the edge (and its page shows `shows`, when given). */
export const servedThroughEdge = (
  stack: Pick<Stack, "edgePort">,
  name: string,
  opts: { shows?: string; withinMs?: number } = {},
) =>
  waitFor(
    `${name} served`,
    async () => {
      const r = await httpGet(stack.edgePort, `${name}.pods.localhost`).catch(() => ({
        status: 0,
        body: "",
      }));
      return r.status === 200 && (opts.shows === undefined || r.body.includes(opts.shows)) ? true : undefined;
    },
    opts.withinMs ?? 60_000,
  );

/** The agent SIGKILLed (a crash: no goodbye, nothing flushed) and started again on the same state. */
export async function crashAgent(stack: Stack): Promise<void> {
  await stack.agent.kill();
  await stack.startAgent();
}

/** The pod's events of one type, counted through the API (the newest 200 are enough for a test's pod). */
export const eventCount = async (api: ApiClient, pod: string, type: string): Promise<number> => {
  const res = await api.get(`/api/pods/${pod}/events?type=${type}&limit=200`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.events as unknown[]).length;
};

/** Until the region has no placeable host (the Worker has seen the agent go). */
export const waitForHostAway = (api: ApiClient, region = "eu-central") =>
  waitFor("the host to be seen away", async () => {
    const res = await api.get("/api/regions");
    const r = (res.body.regions as { slug: string; available: boolean }[] | undefined)?.find(
      (x) => x.slug === region,
    );
    return r && !r.available ? true : undefined;
  });

/**
 * The keys of the local Worker's R2 objects under `prefix` (default: the staged blobs, archives a
 * host is to fetch), and the multipart uploads still open under it, read from its persist
 * directory (Miniflare's SQLite store, opened read-only: the running Worker keeps writing it).
 */
export async function r2Keys(stack: Stack, prefix = "staging/"): Promise<string[]> {
  const dir = path.join(stack.worker.persistDir, "v3", "r2", "miniflare-R2BucketObject");
  const stores = (await readdir(dir).catch(() => [] as string[])).filter(
    (f) => f.endsWith(".sqlite") && f !== "metadata.sqlite",
  );
  const like = `${prefix.replaceAll("'", "''")}%`;
  const keys: string[] = [];
  for (const store of stores) {
    const { stdout } = await run("sqlite3", [
      "-readonly",
      path.join(dir, store),
      `SELECT key FROM _mf_objects WHERE key LIKE '${like}'; SELECT 'open upload ' || key FROM _mf_multipart_uploads WHERE key LIKE '${like}' AND state = 0;`,
    ]);
    keys.push(...stdout.split("\n").filter(Boolean));
  }
  return keys.sort();
}

/**
 * A multipart POST on a connection of its own (`agent: false`), its answer parsed. A Worker may
 * answer before it read the whole body (a 503 while the host is away): on a pooled connection the
 * rest of the body then held up the test's next requests until undici's header timeout.
 */
export function postMultipart(
  url: string,
  token: string,
  parts: { name: string; value: string | Uint8Array; filename?: string; type?: string }[],
): Promise<{ status: number; body: any }> {
  const boundary = `chaos${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ""}`;
    const type = p.type ? `content-type: ${p.type}\r\n` : "";
    chunks.push(Buffer.from(`--${boundary}\r\ncontent-disposition: ${disposition}\r\n${type}\r\n`));
    chunks.push(Buffer.from(p.value));
    chunks.push(Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  const body = Buffer.concat(chunks);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      agent: false,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(body.length),
      },
    });
    req.on("response", (res) => {
      const got: Buffer[] = [];
      res.on("data", (c: Buffer) => got.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(got).toString();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
        req.destroy();
      });
    });
    req.on("error", reject);
    req.end(body, () => undefined);
  });
}

/**
 * The "agent gone before dispatch" fault, in its two halves. `away` SIGKILLs the agent and waits
 * until the Worker sees the host away, so an operation asked next finds no host to dispatch to.
 * `back` waits `pauseMs` (the Worker's first dispatch finds no host and its step waits for the
 * host's return, worker/workflows/host-step.ts) and starts the agent again.
 */
export const agentGoneBeforeDispatch = (stack: Stack, api: ApiClient, region = "eu-central") => ({
  away: async () => {
    await stack.agent.kill();
    await waitForHostAway(api, region);
  },
  back: async (pauseMs = 3_000) => {
    await sleep(pauseMs);
    await stack.startAgent();
  },
});

/**
 * `p`, or a rejection after `ms`: a poll's one request that hangs (a local Worker under a loaded
 * machine has held one for undici's whole 300 s header timeout) fails that poll, not the whole wait.
 */
export const within = <T>(p: Promise<T>, ms = 20_000): Promise<T> =>
  Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);

/**
 * A static pod's files through the API and its page through the edge, as the disk-full files check
 * them: `create` asks for a Launch pod (202), `write`/`read` a file under ~/app (200), `serves` the
 * page that still says "still here". Getters: the stack and the user exist only after `beforeAll`.
 */
export function staticPodFiles(edgePort: () => number, api: () => ApiClient) {
  return {
    async create(as: ApiClient, name: string) {
      const res = await as.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    },
    async write(name: string, file: string, content: string) {
      const res = await api().put(`/api/pods/${name}/files/content`, {
        path: `/home/pod_user/app/${file}`,
        content,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    },
    async read(name: string, file: string) {
      const res = await api().get(`/api/pods/${name}/files/content?path=/home/pod_user/app/${file}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.content as string;
    },
    async serves(name: string) {
      const page = await httpGet(edgePort(), `${name}.pods.localhost`, "/index.html");
      expect(page.status).toBe(200);
      expect(page.body).toContain("still here");
    },
  };
}
