import { fail, ok, type Result } from "../../../shared/errors";
import { LOG_HISTORY_SOURCES, LOG_RANGE_MAX_DAYS, type LogSource } from "../../../shared/protocol/inside";
import type { TeamCall } from "../context";
import { callPodHost } from "../pods/target";

const LOGS_TIMEOUT_MS = 40_000;

export interface LogsInput {
  /** the pod's name */
  name: string;
  source: LogSource;
  lines: number;
  grep?: string;
  /** ISO 8601 times: with either, the read is of the log's history (docs/logs.md "History") */
  since?: string;
  until?: string;
}

export interface LogsView {
  source: LogSource;
  lines: string[];
  message?: "no entries";
  /** a history read that a bound cut short */
  truncated?: boolean;
}

const DAY_MS = 86_400_000;

/**
 * A history read's range in ms: `until` defaults to now and `since` to a day before it; at most
 * LOG_RANGE_MAX_DAYS wide, and only of the logs that have a history.
 */
export function historyRange(
  q: Pick<LogsInput, "source" | "since" | "until">,
  now: number,
): Result<{ since: number; until: number } | null> {
  if (q.since === undefined && q.until === undefined) return ok(null);
  if (!(LOG_HISTORY_SOURCES as readonly string[]).includes(q.source)) {
    return fail(
      "bad_request",
      `source: ${q.source} has no history; since and until read ${LOG_HISTORY_SOURCES.join(", ")}`,
    );
  }
  const until = q.until === undefined ? now : Date.parse(q.until);
  if (!Number.isFinite(until)) return fail("bad_request", "until: must be an ISO 8601 time");
  const since = q.since === undefined ? until - DAY_MS : Date.parse(q.since);
  if (!Number.isFinite(since)) return fail("bad_request", "since: must be an ISO 8601 time");
  if (since < 0) return fail("bad_request", "since: must not be before 1970");
  if (until < since) return fail("bad_request", "until: must not be before since");
  if (until - since > LOG_RANGE_MAX_DAYS * DAY_MS) {
    return fail("bad_request", `until: the range from since is at most ${LOG_RANGE_MAX_DAYS} days`);
  }
  return ok({ since, until });
}

/**
 * The tail of one of the pod's logs, or with `grep` its last matching lines newest first. Works on
 * a stopped pod too (the files are in its home volume). A filtered read with no match is a success
 * carrying `message: "no entries"` (contract); a missing log file is simply no lines.
 */
export async function readPodLogs({ ctx, teamId, input: q }: TeamCall<LogsInput>): Promise<Result<LogsView>> {
  const { name } = q;
  const grep = q.grep === "" ? undefined : q.grep;
  const range = historyRange(q, Date.now());
  if (!range.ok) return range;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.logs",
    {
      name,
      source: q.source,
      lines: q.lines,
      ...(grep !== undefined ? { grep } : {}),
      ...(range.value ?? {}),
    },
    { timeoutMs: LOGS_TIMEOUT_MS, running: false },
  );
  if (!r.ok) return r;
  const view: LogsView = { source: q.source, lines: r.value.lines };
  if (grep !== undefined && r.value.lines.length === 0) view.message = "no entries";
  if (r.value.truncated) view.truncated = true;
  return ok(view);
}
