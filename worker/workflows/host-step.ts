import type { WorkflowStep } from "cloudflare:workers";
import { durationText, fail, type Result } from "../../shared/errors";
import type { Op, OpParams, OpResult } from "../../shared/protocol";
import { createDb } from "../db/client";
import { hostAgentStub, typedOutcome } from "../durable-objects/host-agent/client";
import type { Dispatched } from "../durable-objects/host-agent/object";
import type { Bindings, WorkflowBinding } from "../env";
import { findHost } from "../services/hosts/hosts";

export interface HostStep<O extends Op> {
  /** the step's name in the workflow; unique within the instance, also its idempotency key */
  name: string;
  hostId: string;
  op: O;
  params: OpParams<O>;
  /** how long the host may work on it (the agent's own timeout) */
  timeoutMs: number;
  /**
   * What the workflow tells the pod's owner about the command (a progress event), recorded once,
   * right after the first send: the host starts on the command one step sooner than if it were
   * recorded before, and the host's answer, which ends the wait after it, always comes later.
   */
  announce?: () => Promise<unknown>;
}

export interface WorkflowRef {
  workflow: WorkflowBinding;
  instanceId: string;
}

/** how long a host that is away (agent gone, restarting) is waited for before the step fails */
export const HOST_RETURN_WINDOW_MS = 5 * 60_000;
/** beyond the host's own timeout: its answer travels, and a reconnect re-sends the command */
const ANSWER_GRACE_MS = 30_000;
/** a host that keeps taking the command and never answers is given up on after this many sends */
const MAX_SENDS = 20;

/**
 * Runs one host command as workflow steps, without holding a request open while the host works:
 * a step dispatches the command to the host's Durable Object (journaled under the step's key), and
 * the workflow sleeps in `waitForEvent` until the object delivers the agent's answer.
 *
 * Every attempt uses the same idempotency key, so the host runs the command once however often it is
 * sent: a step replayed after a Worker restart, an answer lost with a connection (the object re-sends
 * pending commands when the agent says hello again, and the agent answers a key it knows from its
 * record), or an agent restarted mid-command (the handler is idempotent: create adopts its own
 * container). A host that is away is waited for, with backoff, for HOST_RETURN_WINDOW_MS.
 *
 * A command whose host reports that its own calls to the control plane failed mid-way (a failure
 * with `component: "control_plane"`) is run again, up to CONTROL_PLANE_RERUNS times.
 *
 * The outcome is the op's typed result, or a failure naming the host when it never answered.
 */
export async function runOnHost<O extends Op>(
  step: WorkflowStep,
  env: Bindings,
  ref: WorkflowRef,
  call: HostStep<O>,
): Promise<Result<OpResult<O>>> {
  let announce = call.announce;
  const sent = async () => {
    const once = announce;
    announce = undefined;
    await once?.();
  };
  for (let run = 1; ; run++) {
    const outcome = await runOnce(step, env, ref, call, run, sent);
    // The host's own calls to the control plane broke off (the Worker restarted while a backup
    // streamed or a restore read its archive): the command is run again, under a new key (the
    // first one's answer is settled), once the control plane that now heard the answer is back.
    if (outcome.ok || outcome.component !== "control_plane" || run > CONTROL_PLANE_RERUNS) return outcome;
    await step.sleep(`${call.name} (control plane was away, rerun #${run})`, RERUN_PAUSE_MS * run);
  }
}

/** how often a command whose host lost the control plane mid-way is run again (shared/errors.ts Component) */
export const CONTROL_PLANE_RERUNS = 3;
const RERUN_PAUSE_MS = 2_000;

async function runOnce<O extends Op>(
  step: WorkflowStep,
  env: Bindings,
  ref: WorkflowRef,
  call: HostStep<O>,
  run: number,
  sent: () => Promise<void>,
): Promise<Result<OpResult<O>>> {
  // the first run keeps the names and key it always had (instances in flight across a deploy)
  const name = run === 1 ? call.name : `${call.name} (rerun #${run - 1})`;
  const key = `${ref.instanceId}:${name}`;
  const eventBase = eventType(name);
  let awayMs = 0;
  for (let attempt = 1; attempt <= MAX_SENDS; attempt++) {
    const type = `${eventBase}-${attempt}`;
    const dispatched = await step.do(
      `${name} (send #${attempt})`,
      { retries: { limit: 3, delay: "1 second", backoff: "exponential" } },
      async (): Promise<Dispatched> =>
        (await hostAgentStub(env, call.hostId).dispatch(call.op, call.params, {
          timeoutMs: call.timeoutMs,
          idempotencyKey: key,
          notify: { ...ref, type },
        })) as Dispatched,
    );
    await sent();
    if (dispatched.state === "settled") return typedOutcome(call.op, dispatched.outcome);
    if (dispatched.state === "unavailable") {
      if (awayMs >= HOST_RETURN_WINDOW_MS) {
        return { ...fail("unavailable", `${call.op}: ${dispatched.message} (host)`), component: "host" };
      }
      const pause = Math.min(2_000 * 2 ** Math.min(attempt - 1, 4), 30_000);
      await step.sleep(`${name} (host away, wait #${attempt})`, pause);
      awayMs += pause;
      continue;
    }
    try {
      const event = await step.waitForEvent<string>(`${name} (answer #${attempt})`, {
        type,
        timeout: call.timeoutMs + ANSWER_GRACE_MS,
      });
      return typedOutcome(call.op, JSON.parse(event.payload) as Result<unknown>);
    } catch {
      // No answer in time: send again (the host runs it once); a host that is gone answers
      // `unavailable` to the next dispatch, and the return window starts counting.
    }
  }
  // the workflow's own wait ran out every time: say which server, what and how long, as its owner knows it
  const server = await step.do(`${name} (name the server that never answered)`, async () => {
    const host = await findHost(createDb(env.DB), call.hostId);
    return host?.name ?? call.hostId;
  });
  const each = durationText(call.timeoutMs + ANSWER_GRACE_MS);
  return {
    ...fail(
      "unavailable",
      `server ${server}'s agent never answered ${call.op}, sent ${MAX_SENDS} times with ${each} each (host)`,
    ),
    component: "host",
  };
}

/** Event types are short and plain: the step's name reduced to letters, digits and dashes. */
const eventType = (name: string) =>
  `host-${name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 60)}`;
