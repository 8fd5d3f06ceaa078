import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

/** a Node app that logs each request's path, and prints `n` lines at once for `/flood?n=` */
const SERVER_JS = `require("http").createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  if (u.pathname === "/flood") {
    const n = Number(u.searchParams.get("n"));
    let out = "";
    for (let i = 0; i < n; i++) out += "flood line " + i + " " + "x".repeat(40) + "\\n";
    process.stdout.write(out);
  } else console.log("request " + u.pathname);
  res.end("ok");
}).listen(process.env.PORT);
`;

interface Follow {
  status: number;
  /** every `lines` of the data events so far */
  lines: string[];
  text: () => string;
  close: () => void;
  ended: Promise<void>;
}

describe("following a pod's log (GET /api/pods/{name}/logs?follow=true)", () => {
  let stack: Stack;
  let alice: User;
  let node: string;
  let site: string;
  const open: Follow[] = [];

  const exec = (pod: string, command: string[], extra: Record<string, unknown> = {}) =>
    alice.api.post(`/api/pods/${pod}/exec`, { command, ...extra });
  const sh = async (pod: string, script: string, ...args: string[]) => {
    const res = await exec(pod, ["sh", "-c", script, "sh", ...args]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.exit_code, res.body.stderr).toBe(0);
    return res.body.stdout as string;
  };

  /** opens a follow and reads it as it comes, unless `read` is false (a caller that never reads) */
  async function follow(pod: string, query = "", read = true): Promise<Follow> {
    const controller = new AbortController();
    const res = await fetch(`${stack.api}/api/pods/${pod}/logs?follow=true${query}`, {
      headers: { authorization: `Bearer ${alice.token}` },
      signal: controller.signal,
    });
    let text = "";
    const lines: string[] = [];
    const f: Follow = {
      status: res.status,
      lines,
      text: () => text,
      close: () => controller.abort(),
      ended: Promise.resolve(),
    };
    if (res.status !== 200) {
      text = await res.text();
      return f;
    }
    open.push(f);
    if (!read) return f;
    const decoder = new TextDecoder();
    let pending = "";
    f.ended = (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          const part = decoder.decode(chunk, { stream: true });
          text += part;
          pending += part;
          let end = pending.indexOf("\n\n");
          while (end >= 0) {
            const event = pending.slice(0, end);
            pending = pending.slice(end + 2);
            if (event.startsWith("data: ")) lines.push(...JSON.parse(event.slice(6)).lines);
            end = pending.indexOf("\n\n");
          }
        }
      } catch {
        // aborted
      }
    })();
    return f;
  }

  const appGet = (path: string) => httpGet(stack.edgePort, `${node}.pods.localhost`, path);

  /**
   * A follow, once one is admitted: a caller who went away frees its place when the Worker writes
   * to it and finds it gone (under wrangler dev, the second write after the close: a new line, or
   * keepalives 15 s apart for a filtered follow that matches nothing), so earlier tests' follows
   * may still hold theirs for a while; a request to the app writes a line.
   */
  const admitted = (pod: string, query = "", read = true) =>
    waitFor(
      "a follow to be admitted",
      async () => {
        const f = await follow(pod, query, read);
        if (f.status === 200) return f;
        expect(f.status, f.text()).toBe(429);
        await appGet("/nudge");
        await new Promise((r) => setTimeout(r, 500));
        return undefined;
      },
      60_000,
    );

  beforeAll(async () => {
    stack = await startStack("follow");
    alice = await signUp(stack.api, "Alice");
    const tag = stack.prefix.slice(-4);
    node = `node-${tag}`;
    site = `site-${tag}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [
      [node, "nodejs"],
      [site, "static"],
    ]);
    await sh(node, 'printf %s "$1" > /home/pod_user/app/server.js', SERVER_JS);
    const reload = await alice.api.post(`/api/pods/${node}/reload`);
    expect(reload.status, JSON.stringify(reload.body)).toBeLessThan(300);
    await waitFor(
      "the app to answer",
      async () => ((await appGet("/ready").catch(() => undefined))?.status === 200 ? true : undefined),
      30_000,
    );
  });

  afterAll(async () => {
    for (const f of open) f.close();
    await stack?.stop();
  });

  it("starts with the last lines, then a line the app prints after the stream opened arrives within 2 s", async () => {
    await appGet("/before-the-follow");
    const f = await follow(node, "&lines=5");
    expect(f.status, f.text()).toBe(200);
    await waitFor(
      "the start",
      async () => (f.lines.some((l) => l.includes("request /before-the-follow")) ? true : undefined),
      5_000,
    );
    const marker = `/after-${Date.now()}`;
    const sent = Date.now();
    await appGet(marker);
    await waitFor(
      "the new line",
      async () => (f.lines.includes(`request ${marker}`) ? true : undefined),
      2_000,
    );
    expect(Date.now() - sent).toBeLessThan(2_000);
    f.close();
  });

  it("filters with the API's PCRE2 grep, start and new lines alike", async () => {
    const f = await follow(node, `&grep=${encodeURIComponent("^request /keep-\\d+$")}`);
    expect(f.status).toBe(200);
    await appGet("/drop-1");
    await appGet("/keep-1");
    await appGet("/keep-x");
    await waitFor("the match", async () => (f.lines.includes("request /keep-1") ? true : undefined), 5_000);
    await appGet("/keep-2");
    await waitFor(
      "the second match",
      async () => (f.lines.includes("request /keep-2") ? true : undefined),
      5_000,
    );
    expect(f.lines.every((l) => /^request \/keep-\d+$/.test(l))).toBe(true);
    f.close();
    const bad = await follow(node, "&grep=(unclosed");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text()).error).toMatch(/^grep: invalid pattern/);
  });

  it("ends with an end event when the pod stops", async () => {
    const f = await follow(site, "&source=web");
    expect(f.status).toBe(200);
    expect((await alice.api.post(`/api/pods/${site}/stop`)).status).toBeLessThan(300);
    await Promise.race([f.ended, new Promise((r) => setTimeout(r, 30_000))]);
    expect(f.text()).toMatch(/event: end\ndata: \{"reason":"[^"]+"\}/);
    expect((await alice.api.post(`/api/pods/${site}/start`)).status).toBeLessThan(300);
    await waitFor(
      "the site to run again",
      async () => ((await alice.api.get(`/api/pods/${site}`)).body.status === "running" ? true : undefined),
      60_000,
    );
  });

  it("attacker: a flood of lines grows neither the agent's memory nor other pods' exec time; follows beyond the cap are 429", async () => {
    // a pod no earlier test followed (a closed follow's place may be held a while: see below),
    // and the neighbour whose commands are timed
    const FLOODED = site;
    const OTHER = node;
    const rss = async () => {
      const status = await readFile(`/proc/${stack.agent.child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
    };
    const execMs = async () => {
      const times: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t = Date.now();
        const r = await exec(OTHER, ["true"]);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        times.push(Date.now() - t);
      }
      return times.sort((a, b) => a - b)[5] ?? 0;
    };
    // ~50 MB of lines into the log, as fast as the pod can write them
    const FLOOD =
      "yes 'flood flood flood flood flood flood flood flood flood' | head -n 800000 >> /home/pod_user/logs/app.log";
    const flood = async () => {
      const r = await exec(FLOODED, ["sh", "-c", FLOOD], { timeout_s: 60 });
      expect(r.body.exit_code, JSON.stringify(r.body)).toBe(0);
    };
    const quiet = await execMs();
    // the same flood with nobody following: what the pod's own writing costs the host
    const alone = flood();
    const floodOnly = await execMs();
    await alone;
    // one follower that never reads, the others reading as fast as they can, up to the pod's cap
    const stalled = await admitted(FLOODED, "", false);
    const readers = [await admitted(FLOODED), await admitted(FLOODED), await admitted(FLOODED)];
    const over = await follow(FLOODED);
    expect(over.status).toBe(429);
    expect(JSON.parse(over.text()).error).toMatch(/at most 4 per pod/);
    const first = flood();
    const busy = await execMs();
    await first;
    // Memory: a second flood as large as the first must not add what the first did (an agent that
    // buffered for the stalled follower would hold ~50 MB more each time); the first one grows
    // the heap to its working size.
    const settled = await rss();
    await flood();
    await execMs();
    const grown = (await rss()) - settled;
    console.log(
      `exec p50: quiet ${quiet} ms, a flood nobody follows ${floodOnly} ms, followed 4 times ${busy} ms; agent RSS +${grown >> 20} MB over a second 50 MB flood; a reader got ${readers[0]?.lines.length} lines`,
    );
    // The followers' cost is bounded by the rate budgets: far from what a control socket clogged by
    // the flood (seconds) would show. The machine's own noise is large, so the bound is loose.
    expect(busy).toBeLessThan(Math.max(quiet, floodOnly) * 2 + 250);
    expect(grown).toBeLessThan(32 * 1024 * 1024);
    expect(readers[0]?.lines.length).toBeGreaterThan(0);
    for (const f of [stalled, ...readers]) f.close();
    // Not asserted here: that the closed follows' places come back at once. Under wrangler dev a
    // caller who went away is only noticed when a write to it fails, and the stalled follower's
    // stream has no write in flight (its pipe is full), so its place may stay held until its lease
    // lapses (docs/inside.md); the places given back on a stream's end are asserted in
    // test/worker/logs-follow.test.ts.
  }, 240_000);
});
