import type { LogSource } from "../../shared/protocol/inside";
import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";
import { BASH, SH, TIMEOUT } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { AgentError } from "../errors";
import { encodedSize, RESULT_BUDGET_BYTES } from "./budget";

/**
 * Reading ~/logs/<source>.log as pod_user inside the pod. Filtering is Debian's `grep -P` (PCRE2)
 * in the pod itself, so the pattern language and its error messages are grep's own. The pattern
 * travels as a positional argument of a fixed script, never as part of one.
 *
 * - unfiltered: the last N lines of the log's last LOG_WINDOW_BYTES (`tail -c`, then split here),
 *   oldest first;
 * - filtered: the last N matching lines of the whole log, newest first, each cut to
 *   GREP_LINE_BYTES in the pod and GREP_OUTPUT_BYTES in all;
 * - an all-lowercase pattern matches case-insensitively (`-i`), any uppercase letter makes it
 *   case-sensitive (as with smart-case in editors).
 *
 * Every read is bounded in bytes whatever the log holds (`tail -n 1` of a 2 GB line is 2 GB): the
 * pod is asked for a bounded amount and the exec keeps no more than that.
 */

const NO_FILE = 3;
/** how much of the log's end an unfiltered read looks at */
export const LOG_WINDOW_BYTES = 4 * 1024 * 1024;
const MAX_LINE_CHARS = 8192;
/** what a filtered read keeps of each matching line, in the pod: MAX_LINE_CHARS of any UTF-8, and one byte to tell */
export const GREP_LINE_BYTES = MAX_LINE_CHARS * 4 + 1;
/** what the agent keeps of a filtered read's output (newest first, so the head is what counts) */
export const GREP_OUTPUT_BYTES = 4 * 1024 * 1024;

// `-f`: a FIFO or directory planted at the path is "no log", not a hang. `-a`: a log with a stray
// binary byte is still text. With no file, the pattern is still compiled so a bad one is a 400.
// One byte more than the window: whether the window starts a line is in the byte before it.
const TAIL = `[ -f "$1" ] || exit ${NO_FILE}; exec tail -c ${LOG_WINDOW_BYTES + 1} -- "$1"`;
// grep reads forward and tail keeps the last N matches: `tac` first would glue a final line that
// is still being written (no newline yet) onto the one before it. bash for PIPESTATUS: grep's own
// exit (0 match, 1 none, 2 bad pattern) is what counts, not tac's. `cut -b` streams, so no line
// longer than GREP_LINE_BYTES reaches `tail`, which holds N lines.
const GREP = `f=$1 n=$2 p=$3 ci=$4
if [ ! -f "$f" ]; then grep -P -e "$p" </dev/null; [ $? -eq 2 ] && exit 2; exit ${NO_FILE}; fi
if [ "$ci" = 1 ]; then i=-i; else i=-P; fi
grep -a -P "$i" -e "$p" -- "$f" | cut -b 1-${GREP_LINE_BYTES} | tail -n "$n" | tac
exit "\${PIPESTATUS[0]}"`;

export const caseInsensitive = (pattern: string) => pattern === pattern.toLowerCase();

export interface LogRead {
  lines: string[];
  exists: boolean;
}

export async function readLog(
  docker: DockerClient,
  prefix: string,
  pod: string,
  q: { source: LogSource; lines: number; grep?: string },
): Promise<LogRead> {
  const file = `${HOME}/logs/${q.source}.log`;
  const filtered = q.grep !== undefined && q.grep !== "";
  const script = filtered
    ? [
        BASH,
        "-c",
        GREP,
        "bash",
        file,
        String(q.lines),
        q.grep ?? "",
        caseInsensitive(q.grep ?? "") ? "1" : "0",
      ]
    : [SH, "-c", TAIL, "sh", file];
  const r = await runAsPodUser(docker, prefix, pod, [TIMEOUT, "20", ...script], {
    timeoutMs: 30_000,
    maxOutputBytes: filtered ? GREP_OUTPUT_BYTES : LOG_WINDOW_BYTES + 1,
  });
  if (r.exitCode === NO_FILE) return { lines: [], exists: false };
  if (filtered && r.exitCode === 1) return { lines: [], exists: true };
  if (filtered && r.exitCode === 2) {
    const message =
      r.stderr
        .trim()
        .split("\n")[0]
        ?.replace(/^grep: /, "") || "the pattern does not compile";
    throw new AgentError("bad_request", `grep: invalid pattern: ${message}`);
  }
  if (r.exitCode === 124) throw new AgentError("unavailable", `reading ${file} timed out`);
  if (r.exitCode !== 0) {
    throw new AgentError("internal", `reading ${file} failed: ${r.stderr.trim().slice(0, 300)}`);
  }
  const lines = filtered ? grepLines(r.stdout, r.omitted.stdout > 0) : tailLines(r.stdoutBytes, q.lines);
  return { lines: withinBudget(lines.map(renderLine), filtered), exists: true };
}

export interface LogLine {
  text: string;
  /** its start lies before what was read (the first line of a tail window) */
  startCut?: boolean;
  /** its end was cut by a byte bound before it came here (its full length is unknown) */
  endCut?: boolean;
}

/**
 * The last `n` lines of a tail window: `tail -c` of one byte more than LOG_WINDOW_BYTES. When the
 * file was longer, that first byte is the one before the window, which says whether the window's
 * first line is whole.
 */
export function tailLines(window: Buffer, n: number, size = LOG_WINDOW_BYTES): LogLine[] {
  let bytes = window;
  let startCut = false;
  if (bytes.length > size) {
    startCut = bytes[0] !== 0x0a;
    bytes = bytes.subarray(bytes.length - size);
  }
  const texts = bytes.toString("utf8").split("\n");
  if (texts.at(-1) === "") texts.pop();
  const first = Math.max(0, texts.length - n);
  return texts
    .slice(first)
    .map((text, i) => (i === 0 && first === 0 && startCut ? { text, startCut } : { text }));
}

/**
 * A filtered read's output, newest first: a line of more than GREP_LINE_BYTES was cut in the pod,
 * and when the output itself was cut, its last (oldest) line may be a fragment and is left out.
 */
export function grepLines(out: string, outputCut: boolean): LogLine[] {
  const texts = out.split("\n");
  if (texts.at(-1) === "") texts.pop();
  if (outputCut && texts.length > 1) texts.pop();
  return texts.map((text) =>
    Buffer.byteLength(text) >= GREP_LINE_BYTES ? { text, endCut: true } : { text },
  );
}

const CUT = "[line truncated]";
const lineMarker = (n: number) => ` [line truncated: ${n} characters omitted]`;

/**
 * Lines over MAX_LINE_CHARS keep their first characters and say how many were left out; a line
 * whose start was not read keeps its last characters after a marker.
 */
export function renderLine(l: LogLine): string {
  if (l.startCut) return `${CUT} ${l.text.length > MAX_LINE_CHARS ? l.text.slice(-MAX_LINE_CHARS) : l.text}`;
  if (l.endCut) return `${l.text.slice(0, MAX_LINE_CHARS)} ${CUT}`;
  if (l.text.length <= MAX_LINE_CHARS) return l.text;
  return l.text.slice(0, MAX_LINE_CHARS) + lineMarker(l.text.length - MAX_LINE_CHARS);
}

/** The lines kept fit the result budget: the newest ones (the head of a filtered read, the tail of an unfiltered one). */
export function withinBudget(cut: string[], newestFirst: boolean): string[] {
  const ordered = newestFirst ? cut : [...cut].reverse();
  const kept: string[] = [];
  let used = 0;
  for (const line of ordered) {
    used += encodedSize(line) + 1;
    if (used > RESULT_BUDGET_BYTES) break;
    kept.push(line);
  }
  return newestFirst ? kept : kept.reverse();
}
