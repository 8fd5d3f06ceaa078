import type { z } from "zod";
import { fail, type Result } from "../../../shared/errors";
import { type Op, type OpParams, type OpResult, ops } from "../../../shared/protocol";
import type { Bindings } from "../../env";

export interface CallOptions {
  /** how long the caller waits for the host (default 30 s) */
  timeoutMs?: number;
  /** the same key on a retry makes the host run the command once */
  idempotencyKey?: string;
  /** the team the command works for: its commands in progress on one host are capped together */
  teamId?: string;
}

export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/** The HostAgent Durable Object of a host: one per host, addressed by host id. */
export const hostAgentStub = (env: Bindings, hostId: string) =>
  env.HOST_AGENT.get(env.HOST_AGENT.idFromName(hostId));

/**
 * Runs one protocol op on a host and returns its typed result, or a failure (`unavailable` when the
 * agent is not connected or does not answer in time, or the code the agent reported).
 */
export async function callHost<O extends Op>(
  env: Bindings,
  hostId: string,
  op: O,
  params: OpParams<O>,
  options: CallOptions = {},
): Promise<Result<OpResult<O>>> {
  let outcome: Result<unknown>;
  try {
    // DO RPC's type mapping cannot express `unknown` payloads; the value is validated just below.
    outcome = (await hostAgentStub(env, hostId).call(op, params, {
      timeoutMs: options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      idempotencyKey: options.idempotencyKey ?? crypto.randomUUID(),
      ...(options.teamId ? { teamId: options.teamId } : {}),
    })) as unknown as Result<unknown>;
  } catch (error) {
    // The host's object was reset mid-call (a deploy, a crash): its in-memory waiter is gone, so the
    // command's outcome is unknown. The caller gets a 503 like any other interrupted command; a retry
    // with the same idempotency key is answered from the journal, never run again.
    console.warn(JSON.stringify({ hostId, op, msg: "host agent call interrupted", error: String(error) }));
    return {
      ...fail(
        "unavailable",
        `the control plane's link to the pod's host was interrupted during ${op}; the command's outcome is unknown (control plane)`,
      ),
      component: "control_plane",
    };
  }
  return typedOutcome(op, outcome);
}

/** A host's answer checked against the op's result schema (the agent is another program). */
export function typedOutcome<O extends Op>(op: O, outcome: Result<unknown>): Result<OpResult<O>> {
  if (!outcome.ok) return outcome;
  const parsed = (ops[op].result as unknown as z.ZodType<OpResult<O>>).safeParse(outcome.value);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : fail("internal", `host answered ${op} with an unexpected result: ${parsed.error.message}`);
}
