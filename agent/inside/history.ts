import { appendFile, mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { z } from "zod";
import { findPlan } from "../../shared/catalog";
import { LOG_HISTORY_SOURCES, type LogSource } from "../../shared/protocol/inside";
import type { PodDisk } from "../disk/pod-disk";
import { writeAtomic as replaceFile } from "../disk/write-atomic";
import type { DockerClient } from "../docker/client";
import type { ExecResult } from "../docker/exec";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME, podNames } from "../docker/naming";
import { AGENT_PATH, SH, TIMEOUT } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { inspectContainer } from "../docker/resources";
import { AgentError } from "../errors";
import type { KeyedLock } from "../handlers/keyed-lock";
import type { Logger } from "../logger";
import { Cursor, lookOnDisk } from "./history-disk";
import { type Part, parseIndex, type Searched, searchParts, selectParts } from "./history-search";
import { renderLine, withinBudget } from "./logs";

export { type Chunk, parseIndex, SEARCH_MAX_BYTES, SEARCH_TIMEOUT_S } from "./history-search";

/**
 * A pod's log history (docs/logs.md "History"), kept by the host where the pod cannot reach it:
 * `<state dir>/logs/<pod>/<source>/<YYYY-MM-DD>.gz` for the app, web and error logs. Nothing of the
 * state dir is mounted into a pod, so what was collected stays as it was, whatever the pod later
 * does to its own ~/logs.
 *
 * - Collecting: every PODHOST_LOG_HISTORY_INTERVAL_S, and before every read of the history, the
 *   host reads what the log gained since its cursor (inode and byte offset, `cursor.json`) as
 *   pod_user in the pod (`tail -c +N | head -c`), keeps the whole lines, gzips them and appends them
 *   as one more gzip member to the UTC day's `.gz` (a series of members is one valid gzip file),
 *   with a line in the day's `.idx`: `<from ms> <to ms> <offset> <length>` (the lines were written
 *   between the previous collection and this one). A log that shrank or was replaced (another
 *   inode) is read again from its start. The pod's own file is left as it is (the pod's disk).
 * - Keeping: days older than the plan's `logHistoryDays` are removed, then the oldest days while
 *   the pod's history is over its plan's `logHistoryMb`; a day alone over it keeps no more.
 * - Reading: the chunks whose time span meets `since`…`until`, newest day first, are decompressed
 *   by the agent's zlib into the pod, where `grep -P` filters them as pod_user (the pattern never
 *   runs on the host; ./history-search.ts), each day's matches newest first, until `lines`
 *   matches or a bound.
 */

/** what one collection reads of a log per step, and the steps of one collection */
export const COLLECT_STEP_BYTES = 16 * 1024 * 1024;
const COLLECT_STEPS = 16;

const NO_FILE = 3;
const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.(gz|idx)$/;

// `-f` as in a read: a FIFO planted at the path is no log. The header line is the inode and the
// offset the bytes start at (0 when the log shrank or is another file than the cursor's).
// PATH: the helper's commands get the pod's own (./exec-helper.ts); runc exec's get AGENT_PATH.
const COLLECT = `export PATH=${AGENT_PATH}
f=$1 ino=$2 off=$3 max=$4
[ -f "$f" ] || exit ${NO_FILE}
set -- $(stat -L -c '%i %s' -- "$f")
[ -n "$2" ] || exit ${NO_FILE}
if [ "$1" != "$ino" ] || [ "$2" -lt "$off" ]; then off=0; fi
echo "$1 $off"
[ "$2" -gt "$off" ] || exit 0
tail -c +$((off + 1)) -- "$f" | head -c "$max"`;

const Policy = z.object({ days: z.number().int().min(1), mb: z.number().int().min(1) });
export type LogPolicy = z.infer<typeof Policy>;

/** a pod created before log history existed keeps the smallest plan's */
const launch = findPlan("launch");
export const DEFAULT_LOG_POLICY: LogPolicy = {
  days: launch?.logHistoryDays ?? 7,
  mb: launch?.logHistoryMb ?? 64,
};

/** the retention and budget a pod's limits carry (the plan's), else the smallest plan's */
export const policyOf = (limits: { logDays?: number; logMb?: number }): LogPolicy => ({
  days: limits.logDays ?? DEFAULT_LOG_POLICY.days,
  mb: limits.logMb ?? DEFAULT_LOG_POLICY.mb,
});

/** "2026-11-28" of a time, UTC */
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export interface HistoryRead {
  lines: string[];
  exists: boolean;
  truncated: boolean;
}

export class LogHistory {
  readonly root: string;

  constructor(
    private readonly docker: DockerClient,
    private readonly prefix: string,
    stateDir: string,
    private readonly locks: KeyedLock,
    private readonly log: Logger,
    private readonly opts: {
      /** how a read streams the history into the pod: the agent's own pipe (runc exec) where it can */
      exec?: StreamExecutor;
      /**
       * The pod's command helper (./exec-helper.ts), where the host has one: `argv` run as pod_user
       * in the running pod by a fork there, not a `runc exec`. null: not run (no helper ready, or
       * it failed): run it the usual way. `start`: a helper not running yet starts for the next time.
       */
      helper?: (
        pod: string,
        argv: string[],
        o: { timeoutS: number; maxOutputBytes: number; start: boolean },
      ) => Promise<ExecResult | null>;
      /**
       * The host's pod disk, where it has one: the periodic collection looks at a log there first
       * and runs nothing in the pod when the log has nothing new (lookOnDisk).
       */
      disk?: PodDisk | null;
      now?: () => number;
    } = {},
  ) {
    this.root = join(stateDir, "logs");
  }

  private now = () => (this.opts.now ?? Date.now)();

  private podDir = (pod: string) => join(this.root, pod);
  private sourceDir = (pod: string, source: LogSource) => join(this.root, pod, source);

  /** the pod's plan's retention and budget (`pod.create`, `pod.resize`) */
  async setPolicy(pod: string, policy: LogPolicy): Promise<void> {
    await writeAtomic(join(this.podDir(pod), "policy.json"), JSON.stringify(policy));
  }

  async policy(pod: string): Promise<LogPolicy> {
    const raw = await readFile(join(this.podDir(pod), "policy.json"), "utf8").catch(() => null);
    const parsed = raw ? Policy.safeParse(JSON.parse(raw)) : null;
    return parsed?.success ? parsed.data : DEFAULT_LOG_POLICY;
  }

  /** everything kept of the pod (its deletion) */
  async remove(pod: string): Promise<void> {
    await this.locks.run(lockKey(pod), () => rm(this.podDir(pod), { recursive: true, force: true }));
  }

  /** the pods that have a history here */
  async pods(): Promise<string[]> {
    return readdir(this.root).catch(() => []);
  }

  /** Collect the app, web and error logs' new lines, then apply retention and budget. */
  async collect(
    pod: string,
    sources: readonly LogSource[] = LOG_HISTORY_SOURCES,
    /** a read's collection: the pod's command helper starts for the next read if it is not there */
    forRead = false,
  ): Promise<void> {
    await this.locks.run(lockKey(pod), async () => {
      for (const source of sources) await this.collectSource(pod, source, forRead);
      await this.keep(pod);
    });
  }

  private async collectSource(pod: string, source: LogSource, forRead: boolean): Promise<void> {
    const dir = this.sourceDir(pod, source);
    const cursorFile = join(dir, "cursor.json");
    const raw = await readFile(cursorFile, "utf8").catch(() => null);
    const parsed = raw ? Cursor.safeParse(JSON.parse(raw)) : null;
    let cursor: Cursor | null = parsed?.success ? parsed.data : null;
    // a read's collection goes to the pod as before: it also starts the pod's helper for the search
    const home = this.opts.disk?.dirOf(podNames(this.prefix, pod).volume);
    const seen = forRead || !home ? "ask" : await lookOnDisk(home, source, cursor, this.now());
    if (seen === "unchanged") return;
    if (seen !== "ask") return replaceFile(cursorFile, JSON.stringify(seen));
    for (let step = 0; step < COLLECT_STEPS; step++) {
      const script = [
        SH,
        "-c",
        COLLECT,
        "sh",
        `${HOME}/logs/${source}.log`,
        cursor?.ino ?? "-",
        String(cursor?.offset ?? 0),
        String(COLLECT_STEP_BYTES),
      ];
      const maxOutputBytes = COLLECT_STEP_BYTES + 64;
      // a fork in the pod by its command helper where one is ready (a read's collection runs beside
      // its search: a `runc exec` of its own took a host core from it), else through the agent's own
      // pipe (runc exec: no engine round trips before a search)
      const r =
        (await this.opts.helper?.(pod, script, { timeoutS: 60, maxOutputBytes, start: forRead })) ??
        (await runAsPodUser(this.docker, this.prefix, pod, [TIMEOUT, "60", ...script], {
          timeoutMs: 90_000,
          maxOutputBytes,
          exec: this.opts.exec,
        }));
      if (r.exitCode === NO_FILE) return;
      if (r.exitCode !== 0) {
        throw new AgentError("internal", `collecting ${source}.log failed: ${r.stderr.trim().slice(0, 300)}`);
      }
      const out = r.stdoutBytes;
      const nl = out.indexOf(0x0a);
      const [ino = "", offText = ""] = out.subarray(0, Math.max(0, nl)).toString().split(" ");
      const start = Number(offText);
      if (nl < 0 || !ino || !Number.isSafeInteger(start)) {
        throw new AgentError("internal", `collecting ${source}.log: unexpected answer`);
      }
      const data = out.subarray(nl + 1);
      // whole lines only, unless one line fills the whole step (it is then kept in pieces)
      const last = data.lastIndexOf(0x0a);
      const take = last >= 0 ? last + 1 : data.length >= COLLECT_STEP_BYTES ? data.length : 0;
      const at = this.now();
      if (take > 0) await this.append(pod, source, data.subarray(0, take), cursor?.at ?? at, at);
      cursor = { ino, offset: start + take, at: take > 0 || !cursor ? at : cursor.at };
      await writeAtomic(cursorFile, JSON.stringify(cursor));
      if (data.length < COLLECT_STEP_BYTES) return;
    }
  }

  private async append(pod: string, source: LogSource, lines: Buffer, from: number, to: number) {
    const dir = this.sourceDir(pod, source);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const policy = await this.policy(pod);
    const day = dayOf(to);
    // over budget with only today left: today keeps no more (the oldest days went first)
    if ((await this.usage(pod)) > policy.mb * 1024 * 1024 && !(await this.dropOldestDay(pod, day, policy))) {
      this.log.warn("log history over its budget: lines not kept", { pod, source, bytes: lines.length });
      return;
    }
    const gz = join(dir, `${day}.gz`);
    const offset = (await stat(gz).catch(() => null))?.size ?? 0;
    // on libuv's threads: a 16 MiB step gzipped inline would hold the agent's event loop up
    const member = await gzipAsync(lines);
    await appendFile(gz, member, { mode: 0o600 });
    await appendFile(join(dir, `${day}.idx`), `${from} ${to} ${offset} ${member.length} ${lines.length}\n`, {
      mode: 0o600,
    });
  }

  /** bytes the pod's history takes */
  async usage(pod: string): Promise<number> {
    let total = 0;
    for (const source of LOG_HISTORY_SOURCES) {
      const dir = this.sourceDir(pod, source);
      for (const name of await readdir(dir).catch(() => [])) {
        if (DAY_FILE.test(name)) total += (await stat(join(dir, name)).catch(() => null))?.size ?? 0;
      }
    }
    return total;
  }

  /** the days kept of every source, oldest first */
  private async days(pod: string): Promise<string[]> {
    const days = new Set<string>();
    for (const source of LOG_HISTORY_SOURCES) {
      for (const name of await readdir(this.sourceDir(pod, source)).catch(() => [])) {
        const m = DAY_FILE.exec(name);
        if (m?.[1]) days.add(m[1]);
      }
    }
    return [...days].sort();
  }

  private async removeDay(pod: string, day: string) {
    for (const source of LOG_HISTORY_SOURCES) {
      const dir = this.sourceDir(pod, source);
      await rm(join(dir, `${day}.gz`), { force: true });
      await rm(join(dir, `${day}.idx`), { force: true });
    }
  }

  /** drop the oldest day before `today`; false when there is none */
  private async dropOldestDay(pod: string, today: string, _policy: LogPolicy): Promise<boolean> {
    const oldest = (await this.days(pod))[0];
    if (!oldest || oldest >= today) return false;
    await this.removeDay(pod, oldest);
    this.log.info("log history over its budget: oldest day removed", { pod, day: oldest });
    return true;
  }

  /** Retention (days older than the plan's) and then the budget (oldest days first). */
  private async keep(pod: string): Promise<void> {
    const policy = await this.policy(pod);
    const today = dayOf(this.now());
    const first = dayOf(this.now() - (policy.days - 1) * 86_400_000);
    for (const day of await this.days(pod)) if (day < first) await this.removeDay(pod, day);
    while ((await this.usage(pod)) > policy.mb * 1024 * 1024) {
      if (!(await this.dropOldestDay(pod, today, policy))) break;
    }
  }

  /**
   * The last `lines` lines (or matches of `grep`) written between `since` and `until`. When the
   * range reaches past the last collection, the log's new lines are collected meanwhile (not
   * first: that would put one more exec in front of every search) and searched after, as the
   * newest.
   */
  async read(
    pod: string,
    q: { source: LogSource; lines: number; grep?: string; since: number; until: number },
  ): Promise<HistoryRead> {
    if (!(LOG_HISTORY_SOURCES as readonly string[]).includes(q.source)) {
      throw new AgentError(
        "bad_request",
        `source: ${q.source} has no history (only ${LOG_HISTORY_SOURCES.join(", ")})`,
      );
    }
    const filtered = q.grep !== undefined && q.grep !== "";
    const pattern = filtered ? (q.grep as string) : "";
    const started = this.now();
    // whether the pod runs (how its search is fed), asked beside reading the index
    const container = podNames(this.prefix, pod).container;
    const running = this.opts.exec
      ? inspectContainer(this.docker, container).then((info) => info?.State.Running === true)
      : Promise.resolve(false);
    running.catch(() => undefined);
    const dir = this.sourceDir(pod, q.source);
    const snapshot = await this.locks.run(lockKey(pod), async () => ({
      ...(await selectParts(dir, q.since, q.until)),
      cursor: await this.cursor(pod, q.source),
      newest: await this.newestChunk(pod, q.source),
    }));
    const collecting =
      snapshot.cursor === null || q.until > snapshot.cursor.at
        ? this.collect(pod, [q.source], true).then(() => true)
        : Promise.resolve(false);
    // a pattern that does not compile is refused even when there is nothing to search
    const older =
      snapshot.parts.length > 0 || filtered
        ? running.then((r) => this.search(pod, snapshot.parts, pattern, q.lines, r))
        : null;
    const [old, collected] = await Promise.all([older, collecting]);
    let fresh: Searched | null = null;
    let freshParts = 0;
    if (collected) {
      // what the snapshot did not have: collected after its newest chunk. Those lines were written
      // before this collection, which dates them: a range up to now (the read's start, give or take
      // the Worker's clock) holds them, also a first collection's (dated only by its own time).
      const after = Math.max(snapshot.cursor?.at ?? -1, snapshot.newest);
      const until = q.until >= started - NOW_SLACK_MS ? Number.MAX_SAFE_INTEGER : q.until;
      const more = await this.locks.run(lockKey(pod), () => selectParts(dir, q.since, until, after));
      freshParts = more.parts.length;
      if (freshParts > 0) fresh = await this.search(pod, more.parts, pattern, q.lines, await running);
    }
    let lines = [...(fresh?.lines ?? []), ...(old?.lines ?? [])].slice(0, q.lines).map(renderLine);
    lines = withinBudget(lines, true);
    if (!filtered) lines.reverse();
    return {
      lines,
      exists: snapshot.parts.length + freshParts > 0,
      truncated: snapshot.truncated || Boolean(old?.cut) || Boolean(fresh?.cut),
    };
  }

  /** when the newest chunk of `source` was collected (ms), -1 without one */
  private async newestChunk(pod: string, source: LogSource): Promise<number> {
    const dir = this.sourceDir(pod, source);
    const newest = (await readdir(dir).catch(() => []))
      .filter((n) => n.endsWith(".idx"))
      .sort()
      .at(-1);
    if (!newest) return -1;
    const chunks = parseIndex(await readFile(join(dir, newest), "utf8"));
    return chunks.reduce((t, c) => Math.max(t, c.to), -1);
  }

  private async cursor(pod: string, source: LogSource): Promise<Cursor | null> {
    const raw = await readFile(join(this.sourceDir(pod, source), "cursor.json"), "utf8").catch(() => null);
    const parsed = raw ? Cursor.safeParse(JSON.parse(raw)) : null;
    return parsed?.success ? parsed.data : null;
  }

  private search(pod: string, parts: Part[], pattern: string, lines: number, running: boolean) {
    const deps = { docker: this.docker, prefix: this.prefix, exec: this.opts.exec };
    return searchParts(deps, pod, parts, pattern, lines, running);
  }
}

/** how far before the host's now an `until` still means "now" (the Worker's clock is another's) */
const NOW_SLACK_MS = 60_000;
const lockKey = (pod: string) => `log-history:${pod}`;
const gzipAsync = promisify(gzip);

async function writeAtomic(path: string, text: string) {
  await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  await replaceFile(path, text, 0o600);
}

/**
 * Every PODHOST_LOG_HISTORY_INTERVAL_S: collect each running pod's logs, and forget the history of
 * pods that no longer have a container on this host.
 */
export async function collectAll(
  history: LogHistory,
  running: string[],
  exists: (pod: string) => Promise<boolean>,
  log: Logger,
): Promise<void> {
  for (const pod of running) {
    await history.collect(pod).catch((error: unknown) => {
      if (error instanceof AgentError && error.code === "not_found") return;
      log.warn("log history: collecting failed", { pod, error: String(error) });
    });
  }
  for (const pod of await history.pods()) {
    if (!(await exists(pod))) await history.remove(pod);
  }
}
