import type { LogSource } from "../../shared/protocol/inside";
import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";
import { runAsPodUser } from "../docker/pod-user";
import { AgentError } from "../errors";
import { encodedSize, RESULT_BUDGET_BYTES } from "./budget";

/**
 * Reading ~/logs/<source>.log as pod_user inside the pod. Filtering is Debian's `grep -P` (PCRE2)
 * in the pod itself, so the pattern language and its error messages are grep's own. The pattern
 * travels as a positional argument of a fixed script, never as part of one.
 *
 * - unfiltered: `tail -n N`, oldest first;
 * - filtered: the last N matching lines, newest first;
 * - an all-lowercase pattern matches case-insensitively (`-i`), any uppercase letter makes it
 *   case-sensitive (as with smart-case in editors).
 */

const NO_FILE = 3;

// `-f`: a FIFO or directory planted at the path is "no log", not a hang. `-a`: a log with a stray
// binary byte is still text. With no file, the pattern is still compiled so a bad one is a 400.
const TAIL = `[ -f "$1" ] || exit ${NO_FILE}; exec tail -n "$2" -- "$1"`;
// grep reads forward and tail keeps the last N matches: `tac` first would glue a final line that
// is still being written (no newline yet) onto the one before it. bash for PIPESTATUS: grep's own
// exit (0 match, 1 none, 2 bad pattern) is what counts, not tac's.
const GREP = `f=$1 n=$2 p=$3 ci=$4
if [ ! -f "$f" ]; then grep -P -e "$p" </dev/null; [ $? -eq 2 ] && exit 2; exit ${NO_FILE}; fi
if [ "$ci" = 1 ]; then i=-i; else i=-P; fi
grep -a -P "$i" -e "$p" -- "$f" | tail -n "$n" | tac
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
        "bash",
        "-c",
        GREP,
        "bash",
        file,
        String(q.lines),
        q.grep ?? "",
        caseInsensitive(q.grep ?? "") ? "1" : "0",
      ]
    : ["sh", "-c", TAIL, "sh", file, String(q.lines)];
  const r = await runAsPodUser(docker, prefix, pod, ["timeout", "20", ...script], { timeoutMs: 30_000 });
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
  const lines = r.stdout.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return { lines: withinBudget(lines, filtered), exists: true };
}

const MAX_LINE_CHARS = 8192;
const lineMarker = (n: number) => ` [line truncated: ${n} characters omitted]`;

/**
 * Long lines are cut, and the lines kept fit the result budget: the newest ones (the head of a
 * filtered read, the tail of an unfiltered one).
 */
function withinBudget(lines: string[], newestFirst: boolean): string[] {
  const cut = lines.map((l) =>
    l.length > MAX_LINE_CHARS ? l.slice(0, MAX_LINE_CHARS) + lineMarker(l.length - MAX_LINE_CHARS) : l,
  );
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
