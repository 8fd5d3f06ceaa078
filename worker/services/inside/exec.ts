import { fail, ok, type Result } from "../../../shared/errors";
import { checkPodPath } from "../../../shared/pod-paths";
import type { TeamCall } from "../context";
import { callTarget, podTarget } from "../pods/target";

export interface ExecInput {
  /** the pod's name */
  name: string;
  command: string[];
  workdir?: string;
  timeout_s: number;
}

export interface ExecOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  duration_ms: number;
  timed_out: boolean;
}

/** the host's own timeout plus the time to reach it and answer */
const CALL_MARGIN_MS = 20_000;

/**
 * Run argv as pod_user in a running pod; a non-zero exit is a result, not an error. `admitted`: the
 * caller's fair-share count, already under way; it is awaited beside the pod's lookup (one wait for
 * both) and its refusal (a thrown 429) comes before the lookup's answer and before the host is asked.
 */
export async function execInPod({
  ctx,
  teamId,
  input,
  admitted,
}: TeamCall<ExecInput> & { admitted?: Promise<void> }): Promise<Result<ExecOutput>> {
  const { name } = input;
  if (input.workdir !== undefined) {
    const checked = checkPodPath(input.workdir);
    if (!checked.ok) {
      await admitted;
      return fail("bad_request", `workdir: ${checked.reason}`);
    }
  }
  const [target] = await Promise.all([podTarget(ctx, teamId, name, { running: true }), admitted]);
  if (!target.ok) return target;
  const r = await callTarget(
    ctx,
    target.value,
    "pod.exec",
    { name, command: input.command, workdir: input.workdir, timeoutS: input.timeout_s },
    { timeoutMs: input.timeout_s * 1000 + CALL_MARGIN_MS },
  );
  if (!r.ok) return r;
  return ok({
    exit_code: r.value.exitCode,
    stdout: r.value.stdout,
    stderr: r.value.stderr,
    duration_ms: r.value.durationMs,
    timed_out: r.value.timedOut,
  });
}
