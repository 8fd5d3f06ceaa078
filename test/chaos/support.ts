import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "vitest";
import type { ApiClient } from "../e2e/support/api";
import type { AgentProcess, Stack } from "../e2e/support/stack";
import { waitFor } from "../e2e/support/stack";

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
