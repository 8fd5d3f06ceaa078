import { open, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable, type Writable } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { CappedBytes } from "../docker/capped";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME, podNames } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { inspectContainer } from "../docker/resources";
import { AgentError } from "../errors";
import { caseInsensitive, GREP_LINE_BYTES, GREP_OUTPUT_BYTES, grepLines, type LogLine } from "./logs";

/**
 * Searching a pod's log history (./history.ts keeps it): which chunks a range reads (`selectParts`)
 * and the search of them in the pod (`searchParts`). The pattern is the tenant's PCRE2 and runs
 * only in the pod, as pod_user, on the pod's CPU share, under `timeout`: the host only reads its
 * own files and decompresses them.
 */

/** the compressed history one read streams into the pod at most (newest first) */
export const SEARCH_MAX_BYTES = 64 * 1024 * 1024;
/** the wall clock of a read's search in the pod, in seconds */
export const SEARCH_TIMEOUT_S = 20;
// One `grep -a -b` reads every day (newest day first) straight from stdin, its matches prefixed
// with their byte offset in the stream; `awk`, which only the matches reach, knows where each day
// ends (the days' text lengths, summed), keeps each day's last `n` matches (fewer once some were
// found), prints them newest first at the day's end and stops once `n` were found (grep then ends
// at its next match, by SIGPIPE; the rest of stdin is drained, never left unread for the engine).
// Two processes whatever the number of days, and the text crosses no pipe but stdin (each day cut
// off by its own `dd | grep | cut | tail | tac` cost as much of the pod's CPU share as grep itself).
// Lines are cut at GREP_LINE_BYTES (mawk's `substr` counts bytes). A pattern that does not compile
// is exit 2 before anything is read. `z` 1: the days come compressed (a stopped pod's helper
// container decompresses them), 0: as text.
const SEARCH = `p=$1 n=$2 ci=$3 z=$4; shift 4
grep -P -e "$p" </dev/null; [ $? -eq 2 ] && exit 2
if [ "$ci" = 1 ]; then i=-i; else i=-P; fi
e=0 ends=
for len; do e=$((e + len)); ends="$ends $e"; done
search() { grep -a -b -P "$i" -e "$p"; }
if [ "$z" = 1 ]; then gzip -dc | search; else search; fi | awk -v n="$n" -v w=${GREP_LINE_BYTES} -v ends="$ends" '
function flush(  k, m) {
  m = c < left ? c : left
  for (k = 1; k <= m; k++) print r[(c - k) % left]
  left -= m; c = 0
  if (left <= 0) { done = 1; exit }
}
BEGIN { nd = split(ends, e, " "); d = 1; c = 0; left = n + 0 }
{
  s = index($0, ":"); off = substr($0, 1, s - 1) + 0
  while (d <= nd && off >= e[d]) { flush(); d++ }
  if (d > nd) next
  r[c % left] = substr($0, s + 1, w); c++
}
END { if (!done) flush() }'
cat >/dev/null
exit 0`;

export interface Chunk {
  from: number;
  to: number;
  offset: number;
  length: number;
  /** its lines' bytes, uncompressed */
  raw: number;
}

export function parseIndex(text: string): Chunk[] {
  const chunks: Chunk[] = [];
  for (const line of text.split("\n")) {
    const [from, to, offset, length, raw] = line.split(" ").map(Number);
    if ([from, to, offset, length, raw].every((n) => Number.isSafeInteger(n) && (n as number) >= 0))
      chunks.push({ from, to, offset, length, raw } as Chunk);
  }
  return chunks;
}

/** a day's chunks in a range: the gzip members as stored, and how long their text is */
export interface Part {
  day: string;
  bytes: Buffer;
  raw: number;
}

export interface Searched {
  lines: LogLine[];
  /** a bound (time, output) cut the search short */
  cut: boolean;
}

/**
 * The compressed chunks of a source's directory that meet `since`…`until`, one part per day, newest
 * day first, at most SEARCH_MAX_BYTES in all (a day that does not fit keeps its newest chunks).
 */
export async function selectParts(
  dir: string,
  since: number,
  until: number,
  /** only chunks collected after this time (ms) */
  after = -1,
): Promise<{ parts: Part[]; truncated: boolean }> {
  const days = (await readdir(dir).catch(() => []))
    .map((n) => /^(\d{4}-\d{2}-\d{2})\.idx$/.exec(n)?.[1])
    .filter((d): d is string => d !== undefined)
    .sort()
    .reverse();
  const parts: Part[] = [];
  let left = SEARCH_MAX_BYTES;
  for (const day of days) {
    const chunks = parseIndex(await readFile(join(dir, `${day}.idx`), "utf8")).filter(
      (c) => c.to >= since && c.from <= until && c.to > after,
    );
    if (chunks.length === 0) continue;
    if (left <= 0) return { parts, truncated: true };
    // the newest chunks that fit
    let kept = 0;
    let size = 0;
    for (let i = chunks.length - 1; i >= 0; i--) {
      const length = (chunks[i] as Chunk).length;
      if (size + length > left) break;
      size += length;
      kept++;
    }
    const use = chunks.slice(chunks.length - kept);
    const first = use[0];
    const lastChunk = use.at(-1);
    if (first && lastChunk) {
      // the chunks of a range are consecutive members: one slice of the file, read alone
      const bytes = await readRange(
        join(dir, `${day}.gz`),
        first.offset,
        lastChunk.offset + lastChunk.length,
      );
      parts.push({ day, bytes, raw: use.reduce((n, c) => n + c.raw, 0) });
      left -= bytes.length;
    }
    if (kept < chunks.length) return { parts, truncated: true };
  }
  return { parts, truncated: false };
}

/** bytes `start`…`end` of a file (fewer when it is shorter: an index that outlived its data) */
async function readRange(path: string, start: number, end: number): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    const buffer = Buffer.alloc(end - start);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, start);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

export interface SearchDeps {
  docker: DockerClient;
  prefix: string;
  /** how a read streams the history into a running pod: the agent's own pipe (runc exec) where it can */
  exec?: StreamExecutor;
}

/**
 * `parts` (newest day first) searched in the pod; their matches, newest first. A running pod gets
 * the text on its stdin from the agent's zlib (`streamText`: decompression takes a host thread, not
 * the pod's share). A stopped pod's helper container gets the gzip members and decompresses them
 * itself. Either way the pod is told each day's text length, where the day's matches end.
 */
export async function searchParts(
  deps: SearchDeps,
  pod: string,
  parts: Part[],
  pattern: string,
  lines: number,
  /** the container's state, when the caller already asked for it */
  running?: boolean,
): Promise<Searched> {
  const container = podNames(deps.prefix, pod).container;
  const isRunning =
    deps.exec !== undefined &&
    (running ?? (await inspectContainer(deps.docker, container))?.State.Running === true);
  const argv = (z: "0" | "1") => [
    TIMEOUT,
    String(SEARCH_TIMEOUT_S),
    SH,
    "-c",
    SEARCH,
    "sh",
    pattern,
    String(lines),
    caseInsensitive(pattern) ? "1" : "0",
    z,
    ...parts.map((p) => String(p.raw)),
  ];
  const r =
    isRunning && deps.exec
      ? await streamText(deps.exec, container, argv("0"), parts)
      : await runAsPodUser(deps.docker, deps.prefix, pod, argv("1"), {
          stdin: Buffer.concat(parts.map((p) => p.bytes)),
          timeoutMs: (SEARCH_TIMEOUT_S + 10) * 1000,
          maxOutputBytes: GREP_OUTPUT_BYTES,
        });
  if (r.exitCode === 2) {
    const message =
      r.stderr
        .trim()
        .split("\n")[0]
        ?.replace(/^grep: /, "") || "the pattern does not compile";
    throw new AgentError("bad_request", `grep: invalid pattern: ${message}`);
  }
  const timedOut = r.exitCode === 124;
  if (r.exitCode !== 0 && !timedOut) {
    throw new AgentError("internal", `searching the log history failed: ${r.stderr.trim().slice(0, 300)}`);
  }
  const outputCut = r.omitted.stdout > 0;
  return { lines: grepLines(r.stdout, outputCut), cut: timedOut || outputCut };
}

/** what the agent's zlib hands the search's stdin at a time */
const TEXT_CHUNK_BYTES = 256 * 1024;

/**
 * The search through the agent's pipe into a running pod, its stdout kept up to GREP_OUTPUT_BYTES.
 * The text is every part's members in turn, decompressed by the agent's zlib on libuv's threads (not
 * the event loop; Node's zlib inflates about twice as fast as the `gzip` program, measured) and
 * written into the process's stdin with backpressure. The day lengths the pod is given rely on the
 * members being the agent's own, whole (a member is appended before its index line, so an index
 * never names bytes that are not there).
 */
async function streamText(exec: StreamExecutor, container: string, argv: string[], parts: Part[]) {
  const signal = AbortSignal.timeout((SEARCH_TIMEOUT_S + 10) * 1000);
  const gunzip = createGunzip({ chunkSize: TEXT_CHUNK_BYTES });
  try {
    const run = await exec(container, argv, { workingDir: HOME, openStdin: true, signal });
    const stdin = run.stdin as Writable;
    // ends once every part was written, or when the search stopped reading (a broken pipe) or ended
    const feed = pipeline(Readable.from(parts.map((p) => p.bytes)), gunzip, stdin).catch(() => undefined);
    const out = new CappedBytes(GREP_OUTPUT_BYTES);
    run.stdout.on("data", out.push);
    const drained = finished(run.stdout).catch(() => undefined);
    const { exitCode, stderr } = await run.done;
    await drained;
    gunzip.destroy();
    await feed;
    return { exitCode, stdout: out.text(), stderr, omitted: { stdout: out.omitted } };
  } finally {
    gunzip.destroy();
  }
}
