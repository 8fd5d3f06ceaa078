import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import type { LogSource } from "../../shared/protocol/inside";
import { CappedBytes } from "../docker/capped";
import type { StreamExecutor, StreamedExec } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { AgentError } from "../errors";
import { streamFileScript } from "../files/run";
import { needRelay } from "../files/transfer";
import type { Logger } from "../logger";
import type { RelayClient } from "../transfer/relay";
import { caseInsensitive, grepLines, LOG_WINDOW_BYTES, renderLine, tailLines } from "./logs";

/**
 * Following a pod's log (`GET /api/pods/{name}/logs?follow=true`): the last lines, then each new
 * line as the app writes it, as server-sent events streamed into the control plane's relay
 * (`/agent/relay/live/{id}`, ../transfer/relay.ts), never over the control WebSocket, so a chatty
 * app's lines cannot queue behind or ahead of other pods' commands.
 *
 * Two processes in the pod, as pod_user, the pattern a positional argument of fixed scripts:
 * - HEAD opens the log, prints its size, then the start: the last LOG_WINDOW_BYTES (unfiltered) or
 *   the last N matches of those bytes (`grep -P`, as `pod.logs` filters, each cut to
 *   GREP_LINE_BYTES); a pattern that does not compile fails here, before any stream exists;
 * - TAIL `tail -F` from exactly that size on (no line is lost or sent twice between the two), piped
 *   through `grep --line-buffered` when filtered, under `timeout` for the follow's bound. `-F`
 *   waits for a log not yet written and follows one that is rotated or truncated.
 *
 * Bounded whatever the app prints:
 * - memory: the agent holds one batch (BATCH_BYTES), one read of the pipe and one partial line
 *   (cut at MAX_LINE_BYTES, the rest of that line dropped and counted); nothing is read from the
 *   pod while the batch waits for the caller (Readable.from pulls the generator only when the relay
 *   wants more), so a slow reader blocks `tail` in the pod, not memory here;
 * - CPU: at most RATE_BYTES a second per follow and HOST_RATE_BYTES for all of the host's follows
 *   together (a stream then lags behind its log rather than costing the host more), FOLLOWS_PER_POD
 *   per pod and FOLLOWS_PER_HOST on the host (429 beyond);
 * - time: `maxSeconds`, then an `end` event; the pod stopping ends it too.
 *
 * The stream's events (documented in docs/inside.md): `data: {"source","lines":[…]}` batches,
 * `: keepalive` every KEEPALIVE_MS, and a last `event: end` with `{"reason"}`.
 */

export const FOLLOWS_PER_POD = 5;
export const FOLLOWS_PER_HOST = 100;
/** a batch is sent when it holds this much, or BATCH_MS after its first line */
const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 50;
const KEEPALIVE_MS = 15_000;
/** what one follow may send a second; more waits in the pod's pipe (tail blocks) */
export const RATE_BYTES = 1024 * 1024;
/** what all follows on the host may send a second together */
export const HOST_RATE_BYTES = 2 * 1024 * 1024;
/** what a followed line keeps, in bytes (as `pod.logs`' 8192 characters of any UTF-8) */
const MAX_LINE_BYTES = 8192 * 4;
const GREP_LINE_BYTES = MAX_LINE_BYTES + 1;
const HEAD_TIMEOUT_S = 20;
const NO_FILE = 3;
const BAD_PATTERN = 2;

// The size line first, then the start's bytes. `-f`: a FIFO or directory planted at the path is
// "no log" (followed from 0, `tail -F` waits for a regular file). The pattern is compiled against
// nothing first, so a bad one is exit 2 even when there is no log yet.
const HEAD = `f=$1 w=$2 p=$3 ci=$4
if [ -n "$p" ]; then grep -P -e "$p" </dev/null; [ $? -eq ${BAD_PATTERN} ] && exit ${BAD_PATTERN}; fi
[ -f "$f" ] || { echo 0; exit ${NO_FILE}; }
exec 3<"$f"
s=$(stat -L -c %s /dev/fd/3) || exit 1
printf '%s\\n' "$s"
if [ -z "$p" ]; then
  st=$(( s > w ? s - w : 0 ))
  tail -c +$((st + 1)) <&3 | head -c $((s - st))
  exit 0
fi
if [ "$ci" = 1 ]; then i=-i; else i=-P; fi
st=$(( s > w ? s - w : 0 ))
tail -c +$((st + 1)) <&3 | head -c $((s - st)) | grep -a -P "$i" -e "$p" | cut -b 1-${GREP_LINE_BYTES} | tail -n "$5"
exit 0`;

const TAIL = `f=$1 o=$2 p=$3 ci=$4
if [ -z "$p" ]; then exec tail -c +$((o + 1)) -F -s 0.5 -- "$f" 2>/dev/null; fi
if [ "$ci" = 1 ]; then i=-i; else i=-P; fi
tail -c +$((o + 1)) -F -s 0.5 -- "$f" 2>/dev/null | grep --line-buffered -a -P "$i" -e "$p"`;

export interface FollowQuery {
  source: LogSource;
  lines: number;
  grep?: string;
  relay: string;
  maxSeconds: number;
}

/** The follows running on this host, counted per pod: the caps above. */
export class LogFollows {
  private readonly perPod = new Map<string, number>();
  private total = 0;
  private readonly hostBudget = new RateBudget(HOST_RATE_BYTES);

  constructor(
    private readonly exec: StreamExecutor,
    private readonly prefix: string,
    private readonly client: RelayClient | undefined,
    private readonly log: Logger,
  ) {}

  /** how many follows run for `pod` (all pods when absent) */
  running(pod?: string): number {
    return pod === undefined ? this.total : (this.perPod.get(pod) ?? 0);
  }

  /**
   * Read the start, begin streaming into the relay, and answer: the stream goes on in the
   * background until its bound, the pod's stop, or the caller going away.
   */
  async start(pod: string, q: FollowQuery): Promise<{ exists: boolean }> {
    const client = needRelay(this.client);
    if (this.running(pod) >= FOLLOWS_PER_POD)
      throw new AgentError("rate_limited", `pod ${pod} has ${FOLLOWS_PER_POD} logs followed already`);
    if (this.total >= FOLLOWS_PER_HOST)
      throw new AgentError("rate_limited", "this host follows as many logs as it can; retry later");
    this.enter(pod);
    try {
      const file = `${HOME}/logs/${q.source}.log`;
      const grep = q.grep === "" ? undefined : q.grep;
      const head = await readHead(this.exec, this.prefix, pod, file, q.lines, grep);
      const stop = new AbortController();
      const run = await streamFileScript(
        this.exec,
        this.prefix,
        pod,
        TAIL,
        [file, String(head.size), grep ?? "", grep !== undefined && caseInsensitive(grep) ? "1" : "0"],
        { timeoutS: q.maxSeconds, signal: stop.signal },
      );
      const body = Readable.from(
        events(q.source, head.lines, run, q.maxSeconds, [new RateBudget(RATE_BYTES), this.hostBudget]),
        { objectMode: false },
      );
      void client
        .live(q.relay, body, stop.signal)
        .catch((error: unknown) => {
          this.log.info("log follow ended", { pod, reason: String(error) });
        })
        .finally(() => {
          stop.abort();
          run.abort();
          body.destroy();
          this.leave(pod);
        });
      return { exists: head.exists };
    } catch (error) {
      this.leave(pod);
      throw error;
    }
  }

  private enter(pod: string) {
    this.perPod.set(pod, this.running(pod) + 1);
    this.total += 1;
  }

  private leave(pod: string) {
    const n = this.running(pod) - 1;
    if (n > 0) this.perPod.set(pod, n);
    else this.perPod.delete(pod);
    this.total -= 1;
  }
}

interface Head {
  exists: boolean;
  /** the log's size when it was read: the follow starts there */
  size: number;
  lines: string[];
}

async function readHead(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  file: string,
  lines: number,
  grep: string | undefined,
): Promise<Head> {
  const filtered = grep !== undefined;
  const run = await streamFileScript(
    exec,
    prefix,
    pod,
    HEAD,
    [
      file,
      String(LOG_WINDOW_BYTES + 1),
      grep ?? "",
      filtered && caseInsensitive(grep) ? "1" : "0",
      String(lines),
    ],
    { timeoutS: HEAD_TIMEOUT_S },
  );
  const out = new CappedBytes(LOG_WINDOW_BYTES + 64);
  run.stdout.on("data", out.push);
  const drained = finished(run.stdout).catch(() => undefined);
  const { exitCode, stderr } = await run.done;
  await drained;
  if (exitCode === BAD_PATTERN) {
    const message =
      stderr
        .trim()
        .split("\n")[0]
        ?.replace(/^grep: /, "") || "the pattern does not compile";
    throw new AgentError("bad_request", `grep: invalid pattern: ${message}`);
  }
  if (exitCode === NO_FILE) return { exists: false, size: 0, lines: [] };
  if (exitCode === 124) throw new AgentError("unavailable", `reading ${file} timed out`);
  if (exitCode !== 0)
    throw new AgentError("internal", `reading ${file} failed: ${stderr.trim().slice(0, 300)}`);
  const bytes = out.bytes();
  const newline = bytes.indexOf(0x0a);
  const size = Number(bytes.subarray(0, newline).toString());
  if (newline < 0 || !Number.isSafeInteger(size))
    throw new AgentError("internal", `reading ${file}: no size`);
  if (lines === 0) return { exists: true, size, lines: [] };
  const rest = bytes.subarray(newline + 1);
  const cut = filtered ? grepLines(rest.toString("utf8"), false) : tailLines(rest, lines);
  return { exists: true, size, lines: cut.map(renderLine) };
}

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const TICK = Symbol("tick");

/**
 * The stream's events: the start, then batches of new lines, keepalives, and the end. A generator
 * pulled by the relay upload: while a batch waits to be taken, nothing more is read from the pod.
 */
async function* events(
  source: LogSource,
  start: string[],
  run: StreamedExec,
  maxSeconds: number,
  budgets: RateBudget[],
): AsyncGenerator<string> {
  yield sse({ source, lines: start });
  const split = new LineSplitter();
  const it = run.stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  // Each read is watched at once: one that fails while the generator waits at a `yield` (the pod's
  // process torn down) must not be an unhandled rejection.
  const read = () => {
    const p = it.next();
    p.catch(() => undefined);
    return p;
  };
  let next: Promise<IteratorResult<Buffer>> | undefined = read();
  let batch: string[] = [];
  let batchBytes = 0;
  let batchSince = 0;
  let lastSent = Date.now();
  const flush = async function* () {
    if (batch.length === 0) return;
    const event = sse({ source, lines: batch });
    batch = [];
    batchBytes = 0;
    for (const budget of budgets) await budget.spend(event.length);
    lastSent = Date.now();
    yield event;
  };
  try {
    while (next) {
      const due = batch.length > 0 ? batchSince + BATCH_MS : lastSent + KEEPALIVE_MS;
      let timer: NodeJS.Timeout | undefined;
      const tick = new Promise<typeof TICK>((resolve) => {
        timer = setTimeout(() => resolve(TICK), Math.max(0, due - Date.now()));
      });
      const r = await Promise.race([next, tick]).finally(() => clearTimeout(timer));
      if (r === TICK) {
        if (batch.length > 0) yield* flush();
        else {
          lastSent = Date.now();
          yield ": keepalive\n\n";
        }
        continue;
      }
      if (r.done) {
        next = undefined;
        break;
      }
      next = read();
      for (const line of split.push(r.value)) {
        if (batch.length === 0) batchSince = Date.now();
        batch.push(line);
        batchBytes += line.length + 4;
        if (batchBytes >= BATCH_BYTES) yield* flush();
      }
    }
    const last = split.end();
    if (last !== undefined) batch.push(last);
    yield* flush();
    const { exitCode } = await run.done.catch(() => ({ exitCode: -1 }));
    const reason =
      exitCode === 124 || exitCode === 137
        ? `the follow lasted its ${maxSeconds} s; reconnect to go on`
        : "the log's reader ended (the pod stopped or restarted)";
    yield `event: end\n${sse({ reason })}`;
  } finally {
    // the caller went away (or the bound came): the pod's process goes too
    run.abort();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Bytes a second, spent before each batch is sent: a follow over its budget waits for the next
 * second (and its pod's `tail` for it). One per follow, and one the host's follows share.
 */
export class RateBudget {
  private start = Date.now();
  private used = 0;

  constructor(private readonly perSecond: number) {}

  async spend(bytes: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      if (now - this.start >= 1000) {
        this.start = now;
        this.used = 0;
      }
      if (this.used < this.perSecond) {
        this.used += bytes;
        return;
      }
      await sleep(this.start + 1000 - now);
    }
  }
}

/**
 * Lines out of a byte stream, each at most MAX_LINE_BYTES: the rest of a longer line is dropped
 * (counted) as it arrives, never held, and the line says so (as `pod.logs` renders cut lines).
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, from);
      if (nl < 0) {
        this.keep(chunk.subarray(from));
        return lines;
      }
      this.keep(chunk.subarray(from, nl));
      lines.push(this.take());
      from = nl + 1;
    }
  }

  /** the last line when the stream ended without its newline */
  end(): string | undefined {
    return this.size > 0 || this.dropped > 0 ? this.take() : undefined;
  }

  private keep(bytes: Buffer) {
    const room = MAX_LINE_BYTES - this.size;
    if (bytes.length > room) this.dropped += bytes.length - room;
    if (room <= 0 || bytes.length === 0) return;
    const part = bytes.length > room ? bytes.subarray(0, room) : bytes;
    this.parts.push(Buffer.from(part));
    this.size += part.length;
  }

  private take(): string {
    const text = Buffer.concat(this.parts, this.size).toString("utf8");
    const cut = this.dropped > 0;
    this.parts = [];
    this.size = 0;
    this.dropped = 0;
    return cut ? renderLine({ text, endCut: true }) : renderLine({ text });
  }
}
