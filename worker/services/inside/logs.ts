import { ok, type Result } from "../../../shared/errors";
import type { LogSource } from "../../../shared/protocol/inside";
import type { TeamCall } from "../context";
import { callPodHost } from "../pods/target";

const LOGS_TIMEOUT_MS = 40_000;

export interface LogsInput {
  /** the pod's name */
  name: string;
  source: LogSource;
  lines: number;
  grep?: string;
}

export interface LogsView {
  source: LogSource;
  lines: string[];
  message?: "no entries";
}

/**
 * The tail of one of the pod's logs, or with `grep` its last matching lines newest first. Works on
 * a stopped pod too (the files are in its home volume). A filtered read with no match is a success
 * carrying `message: "no entries"` (contract); a missing log file is simply no lines.
 */
export async function readPodLogs({ ctx, teamId, input: q }: TeamCall<LogsInput>): Promise<Result<LogsView>> {
  const { name } = q;
  const grep = q.grep === "" ? undefined : q.grep;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.logs",
    { name, source: q.source, lines: q.lines, ...(grep !== undefined ? { grep } : {}) },
    { timeoutMs: LOGS_TIMEOUT_MS, running: false },
  );
  if (!r.ok) return r;
  const view: LogsView = { source: q.source, lines: r.value.lines };
  if (grep !== undefined && r.value.lines.length === 0) view.message = "no entries";
  return ok(view);
}
