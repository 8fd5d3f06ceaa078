import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { podDiskOf } from "../../agent/disk/pod-disk";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { RuncContainers } from "../../agent/docker/runc";
import { podStreams } from "../../agent/handlers/deps";
import { KeyedLock } from "../../agent/handlers/keyed-lock";
import { ExecHelpers } from "../../agent/inside/exec-helper";
import { collectAll, dayOf, LogHistory, parseIndex } from "../../agent/inside/history";
import { type Agent, podShell, podSpec, startAgent, until } from "./helpers";

/**
 * The log history against real Docker: the host collects a pod's app, web and error logs into
 * `<state dir>/logs/<pod>/<source>/<day>.gz`, keeps the plan's days within its budget, searches a
 * range of days newest first, and the pod cannot reach, delete or rewrite what was collected.
 */

const DAY = 86_400_000;
const POD = "histo";

/** a past day's history written straight into the host directory, as the collector would */
async function plantDay(agent: Agent, pod: string, source: string, at: number, lines: string[]) {
  const dir = join(agent.stateDir, "logs", pod, source);
  await mkdir(dir, { recursive: true });
  const gz = join(dir, `${dayOf(at)}.gz`);
  const offset = (await stat(gz).catch(() => null))?.size ?? 0;
  const text = Buffer.from(`${lines.join("\n")}\n`);
  const member = gzipSync(text);
  await writeFile(gz, member, { flag: "a" });
  await writeFile(
    join(dir, `${dayOf(at)}.idx`),
    `${at - 60_000} ${at} ${offset} ${member.length} ${text.length}\n`,
    {
      flag: "a",
    },
  );
}

const sha = async (path: string) =>
  createHash("sha256")
    .update(await readFile(path))
    .digest("hex");

describe("log history", () => {
  let agent: Agent;
  let sh: (script: string, ...args: string[]) => Promise<string>;
  let container: string;
  const read = (q: {
    source?: "app" | "web" | "error" | "build";
    grep?: string;
    since: number;
    until: number;
    lines?: number;
  }) => agent.handlers["pod.logs"]({ name: POD, source: "app", lines: 100, ...q }, agent.ctx);
  /** a LogHistory of its own on the test agent's engine, state and locks */
  const historyOf = (opts?: ConstructorParameters<typeof LogHistory>[5]) =>
    new LogHistory(
      agent.docker,
      agent.config.namePrefix,
      agent.stateDir,
      agent.locks ?? new KeyedLock(),
      agent.log,
      opts,
    );

  const resize = (logDays: number, logMb: number) =>
    agent.handlers["pod.resize"](
      { name: POD, limits: { cpu: 0.5, memoryMb: 256, diskGb: 5, pids: 128, logDays, logMb } },
      agent.ctx,
    );

  beforeAll(async () => {
    agent = await startAgent();
    await agent.handlers["pod.create"](
      podSpec(POD, { limits: { cpu: 0.5, memoryMb: 256, diskGb: 5, pids: 128, logDays: 3, logMb: 1 } }),
      agent.ctx,
    );
    container = podNames(agent.config.namePrefix, POD).container;
    sh = podShell(agent, container);
  }, 120_000);

  afterAll(async () => {
    await agent?.cleanup();
  }, 60_000);

  it("keeps the plan's retention and budget the pod was created with", async () => {
    const policy = JSON.parse(await readFile(join(agent.stateDir, "logs", POD, "policy.json"), "utf8"));
    expect(policy).toEqual({ days: 3, mb: 1 });
    await agent.handlers["pod.resize"](
      { name: POD, limits: { cpu: 0.5, memoryMb: 256, diskGb: 5, pids: 128, logDays: 2, logMb: 1 } },
      agent.ctx,
    );
    expect(JSON.parse(await readFile(join(agent.stateDir, "logs", POD, "policy.json"), "utf8"))).toEqual({
      days: 2,
      mb: 1,
    });
  });

  it("collects new whole lines into today's gzip, once, and reads a range back", async () => {
    const t0 = Date.now();
    await sh(
      'for i in 1 2 3; do echo "collected line $i" >> ~/logs/app.log; done; printf "partial" >> ~/logs/app.log',
    );
    const first = await read({ grep: "collected line", since: t0 - 60_000, until: Date.now() + 60_000 });
    expect(first.lines).toEqual(["collected line 3", "collected line 2", "collected line 1"]);
    expect(first.truncated).toBe(false);
    const dir = join(agent.stateDir, "logs", POD, "app");
    const gz = gunzipSync(await readFile(join(dir, `${dayOf(Date.now())}.gz`))).toString();
    expect(gz).toContain("collected line 3\n");
    // the line being written is not collected until it ends
    expect(gz).not.toContain("partial");
    await sh('echo " now whole" >> ~/logs/app.log');
    const second = await read({ since: t0 - 60_000, until: Date.now() + 60_000 });
    // unfiltered: oldest first, each line once though collected twice over
    expect(second.lines.filter((l) => l.includes("collected line"))).toHaveLength(3);
    expect(second.lines.at(-1)).toBe("partial now whole");
    // a range that ends before the lines were collected finds none of them
    const before = await read({ grep: "collected", since: t0 - 3 * DAY, until: t0 - 2 * DAY });
    expect(before.lines).toEqual([]);
  });

  it("searches across days newest first, only the range asked for", async () => {
    await resize(30, 64);
    const now = Date.now();
    await plantDay(agent, POD, "error", now - 2 * DAY, ["old boom a", "old calm", "old boom b"]);
    await plantDay(agent, POD, "error", now - DAY, ["new boom c", "new boom d"]);
    const all = await read({ source: "error", grep: "boom", since: now - 3 * DAY, until: now });
    expect(all.lines).toEqual(["new boom d", "new boom c", "old boom b", "old boom a"]);
    const capped = await read({ source: "error", grep: "boom", since: now - 3 * DAY, until: now, lines: 3 });
    expect(capped.lines).toEqual(["new boom d", "new boom c", "old boom b"]);
    const older = await read({ source: "error", grep: "boom", since: now - 3 * DAY, until: now - 1.5 * DAY });
    expect(older.lines).toEqual(["old boom b", "old boom a"]);
    // smart case and PCRE2 as a read of the live log
    const pcre = await read({
      source: "error",
      grep: "\\bBOOM\\s[a-c]$|calm",
      since: now - 3 * DAY,
      until: now,
    });
    expect(pcre.lines).toEqual(["old calm"]);
    await expect(
      read({ source: "error", grep: "(unclosed", since: now - 3 * DAY, until: now }),
    ).rejects.toThrow(/grep: invalid pattern/);
    await expect(read({ source: "build", since: now - DAY, until: now })).rejects.toThrow(/no history/);
  });

  it("keeps each day's matches apart at its boundaries: the newest of each day, newest day first", async () => {
    await resize(30, 64);
    const now = Date.now();
    // several members a day; the middle day has no match; lines with colons; a match on each
    // day's first and last line, so a day's last match sits right before the next day's first
    await plantDay(agent, POD, "web", now - 3 * DAY, ["hit:3:a", "miss", "hit:3:b"]);
    await plantDay(agent, POD, "web", now - 3 * DAY + 60_000, ["miss", "hit:3:c"]);
    await plantDay(agent, POD, "web", now - 2 * DAY, ["miss: none here", "miss"]);
    await plantDay(agent, POD, "web", now - DAY, ["hit:1:a", "hit:1:b"]);
    await plantDay(agent, POD, "web", now - DAY + 60_000, ["hit:1:c", "miss", "hit:1:d"]);
    const q = { source: "web" as const, grep: "^hit:", since: now - 4 * DAY, until: now };
    expect((await read({ ...q, lines: 100 })).lines).toEqual([
      "hit:1:d",
      "hit:1:c",
      "hit:1:b",
      "hit:1:a",
      "hit:3:c",
      "hit:3:b",
      "hit:3:a",
    ]);
    // the newest day alone has more than asked for: its newest ones, none of an older day
    expect((await read({ ...q, lines: 3 })).lines).toEqual(["hit:1:d", "hit:1:c", "hit:1:b"]);
    // exactly the newest day's, then one more from the day with matches before it
    expect((await read({ ...q, lines: 4 })).lines).toEqual(["hit:1:d", "hit:1:c", "hit:1:b", "hit:1:a"]);
    expect((await read({ ...q, lines: 5 })).lines).toEqual([
      "hit:1:d",
      "hit:1:c",
      "hit:1:b",
      "hit:1:a",
      "hit:3:c",
    ]);
    // a match of 40,000 characters is cut in the pod (past GREP_LINE_BYTES), then as in a live read
    const longLine = `hit:long ${"x".repeat(40_000)}`;
    await plantDay(agent, POD, "web", now - DAY + 120_000, [longLine]);
    const long = await read({ ...q, lines: 2 });
    expect(long.lines[0]).toBe(`${longLine.slice(0, 8192)} [line truncated]`);
    expect(long.lines[1]).toBe("hit:1:d");
    expect(long.truncated).toBe(false);
    // over 4 MiB of matches: the newest are answered and the read says it was cut short
    const big = Array.from(
      { length: 1000 },
      (_, i) => `hit:big ${String(i).padStart(4, "0")} ${"y".repeat(8000)}`,
    );
    await plantDay(agent, POD, "web", now - DAY + 180_000, big);
    const cut = await read({ ...q, lines: 1000 });
    expect(cut.truncated).toBe(true);
    expect(cut.lines[0]?.startsWith("hit:big 0999 ")).toBe(true);
    expect(cut.lines[1]?.startsWith("hit:big 0998 ")).toBe(true);
    expect(cut.lines.length).toBeGreaterThan(100);
    expect(cut.lines.length).toBeLessThan(1000);
  });

  it("removes days past the plan's retention and the oldest days past its budget", async () => {
    await resize(2, 1);
    const history = historyOf();
    const now = Date.now();
    const dir = join(agent.stateDir, "logs", POD, "web");
    await plantDay(agent, POD, "web", now - 5 * DAY, ["too old"]);
    // 1 MiB of budget (the policy): two past days of incompressible bytes are over it together
    const noise = () =>
      randomBytes(900_000)
        .toString("base64")
        .match(/.{1,76}/g) ?? [];
    await plantDay(agent, POD, "web", now - DAY, noise());
    await plantDay(agent, POD, "app", now - DAY, noise());
    expect(await history.usage(POD)).toBeGreaterThan(1024 * 1024);
    await history.collect(POD);
    const days = (await readdir(dir)).filter((n) => n.endsWith(".gz"));
    // retention: 2 days (today and yesterday) — the day 5 days back is gone at once
    expect(days).not.toContain(`${dayOf(now - 5 * DAY)}.gz`);
    expect(await history.usage(POD)).toBeLessThanOrEqual(1024 * 1024);
    // over budget, yesterday went as a whole (every source), today stayed
    expect(days).not.toContain(`${dayOf(now - DAY)}.gz`);
    expect(await readdir(join(agent.stateDir, "logs", POD, "app"))).toContain(`${dayOf(now)}.gz`);
  });

  it("is out of the pod's reach: the pod can neither find, delete nor rewrite its history", async () => {
    const now = Date.now();
    await sh('echo "original secret line" >> ~/logs/app.log');
    await read({ since: now - 60_000, until: now + 60_000 });
    const gz = join(agent.stateDir, "logs", POD, "app", `${dayOf(now)}.gz`);
    const idx = join(agent.stateDir, "logs", POD, "app", `${dayOf(now)}.idx`);
    const before = {
      gz: await sha(gz),
      idx: await sha(idx),
      gzSize: (await stat(gz)).size,
      idxSize: (await stat(idx)).size,
    };
    const chunksBefore = parseIndex(await readFile(idx, "utf8")).length;

    // As pod_user and as root inside the container: look for it, delete what looks like it, rewrite the log.
    const attack = `find / -xdev \\( -name '*.gz' -o -name '*.idx' -o -name 'cursor.json' \\) -path '*/${POD}/*' 2>/dev/null
rm -rf ${agent.stateDir} /var/lib/podhost-agent 2>/dev/null
printf 'forged line\\n' > ~/logs/app.log
true`;
    for (const user of ["1000:1000", "root"]) {
      const r = await execInContainer(agent.docker, container, ["/bin/bash", "-c", attack], {
        user,
        workingDir: "/home/pod_user",
      });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout, `found as ${user}`).toBe("");
    }
    // collected again: the rewritten log (shorter than the cursor) is read from its start
    const later = await read({ grep: "line", since: now - 60_000, until: Date.now() + 60_000 });
    expect(later.lines[0]).toBe("forged line");
    expect(later.lines).toContain("original secret line");
    // appended to, never rewritten: what the host had is byte for byte the start of what it has
    const [gzNow, idxNow] = [await readFile(gz), await readFile(idx)];
    expect(gzNow.length).toBeGreaterThan(before.gzSize);
    expect(createHash("sha256").update(gzNow.subarray(0, before.gzSize)).digest("hex")).toBe(before.gz);
    expect(createHash("sha256").update(idxNow.subarray(0, before.idxSize)).digest("hex")).toBe(before.idx);
    expect(parseIndex(idxNow.toString()).length).toBe(chunksBefore + 1);
  });

  it("collects every running pod on the periodic pass, and forgets pods that have no container any more", async () => {
    const history = historyOf();
    await sh('echo "periodic line" >> ~/logs/error.log');
    await mkdir(join(agent.stateDir, "logs", "gone-pod", "app"), { recursive: true });
    const exists = async (pod: string) => pod === POD;
    await collectAll(history, [POD], exists, agent.log);
    expect(await history.pods()).toEqual([POD]);
    const gz = await readFile(join(agent.stateDir, "logs", POD, "error", `${dayOf(Date.now())}.gz`));
    expect(gunzipSync(gz).toString()).toContain("periodic line\n");
  });

  it("runs nothing in the pod on a periodic pass while its logs have nothing new or are empty; a ~/logs link is not followed on the host", async () => {
    const streams = podStreams(agent);
    let execs = 0;
    const history = historyOf({
      exec: (...args) => {
        execs++;
        return streams(...args);
      },
      disk: podDiskOf(agent.config.podDiskRoot),
    });
    const today = () => join(agent.stateDir, "logs", POD, "app", `${dayOf(Date.now())}.gz`);
    await sh('echo "before the quiet" >> ~/logs/app.log');
    await history.collect(POD);
    expect(execs).toBeGreaterThan(0);
    const kept = await readFile(today());

    // nothing written since: no command in the pod, nothing added
    execs = 0;
    await history.collect(POD);
    await history.collect(POD);
    expect(execs).toBe(0);
    expect(await readFile(today())).toEqual(kept);

    // a new line: the pod is asked, for that log alone, and the line is kept
    await sh('echo "after the quiet" >> ~/logs/app.log');
    await history.collect(POD);
    expect(execs).toBe(1);
    expect(gunzipSync(await readFile(today())).toString()).toContain("after the quiet\n");

    // a log replaced by an empty one (as each boot and a rotation make them): the cursor moves to its
    // start from the host, and what is written to it next is read from there
    execs = 0;
    await sh("rm ~/logs/web.log && : > ~/logs/web.log");
    await history.collect(POD);
    expect(execs).toBe(0);
    const cursor = JSON.parse(
      await readFile(join(agent.stateDir, "logs", POD, "web", "cursor.json"), "utf8"),
    );
    expect(cursor).toMatchObject({ ino: (await sh("stat -c %i ~/logs/web.log")).trim(), offset: 0 });
    await sh('echo "first in the new file" >> ~/logs/web.log');
    await history.collect(POD);
    expect(execs).toBe(1);
    const web = await readFile(join(agent.stateDir, "logs", POD, "web", `${dayOf(Date.now())}.gz`));
    expect(gunzipSync(web).toString()).toContain("first in the new file\n");

    // ~/logs made a link to / (the host's root, seen from the host): not looked through, the pod is asked
    execs = 0;
    await sh("mv ~/logs ~/logs.real && ln -s / ~/logs");
    try {
      await history.collect(POD);
      expect(execs).toBe(3);
    } finally {
      await sh("rm ~/logs && mv ~/logs.real ~/logs");
    }
  });

  it("collects a read's new lines by the pod's command helper once it runs; the usual way once the pod killed it", async () => {
    const runc = new RuncContainers(agent.docker, agent.config.runcRoot as string);
    const helpers = new ExecHelpers(runc, agent.log);
    const ways: string[] = [];
    const history = historyOf({
      exec: podStreams(agent),
      helper: async (pod, argv, o) => {
        const r = await helpers.runOwn(runc, podNames(agent.config.namePrefix, pod).container, argv, o);
        ways.push(r ? "helper" : "usual");
        return r;
      },
    });
    try {
      const id = (await runc.idOf(container)) as string;
      const t0 = Date.now();
      const read = (grep: string) =>
        history.read(POD, { source: "app", lines: 10, grep, since: t0 - 60_000, until: Date.now() + 60_000 });
      await sh('echo "by helper 1" >> ~/logs/app.log');
      expect((await read("by helper")).lines).toEqual(["by helper 1"]);
      // the pod had no helper: the usual way, and the read started one for the next read
      expect(ways).toEqual(["usual"]);
      expect(await until(async () => helpers.isReady(id))).toBe(true);
      await sh('echo "by helper 2" >> ~/logs/app.log');
      expect((await read("by helper")).lines).toEqual(["by helper 2", "by helper 1"]);
      expect(ways.at(-1)).toBe("helper");
      // the helper is the pod's own process: the pod kills it, the next read still collects
      await sh("pkill -KILL -u pod_user -f '^/usr/bin/python3 -I -S'");
      await sh('echo "by helper 3" >> ~/logs/app.log');
      expect((await read("by helper")).lines).toEqual(["by helper 3", "by helper 2", "by helper 1"]);
      expect(ways.at(-1)).toBe("usual");
    } finally {
      helpers.close();
    }
  }, 60_000);

  it("searches a stopped pod's history too (in a helper container, from the gzip members)", async () => {
    await resize(30, 64);
    const now = Date.now();
    await plantDay(agent, POD, "error", now - 2 * DAY, ["stopped boom f", "stopped calm"]);
    await plantDay(agent, POD, "error", now - DAY, ["stopped boom e"]);
    await agent.handlers["pod.stop"]({ name: POD }, agent.ctx);
    const r = await read({
      source: "error",
      grep: "stopped boom",
      since: now - 3 * DAY,
      until: now,
    });
    expect(r.lines).toEqual(["stopped boom e", "stopped boom f"]);
  }, 60_000);
});
