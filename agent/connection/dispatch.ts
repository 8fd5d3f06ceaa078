import type { z } from "zod";
import { type Component, durationText, type ErrorCode, reasonOf } from "../../shared/errors";
import {
  type AgentResultMessage,
  type ControlMessage,
  type Op,
  ops,
  podOfParams,
  type WireError,
} from "../../shared/protocol";
import { withoutHostDetails } from "../docker/engine-errors";
import { AgentError } from "../errors";
import type { HandlerTable } from "../handlers/types";
import type { Logger } from "../logger";

type Call = Extract<ControlMessage, { type: "control:call" }>;
type Outcome = { ok: true; data: unknown } | { ok: false; error: WireError };

const IDEMPOTENCY_TTL_MS = 60 * 60_000;
const IDEMPOTENCY_MAX = 2_000;
/**
 * The largest outcome kept for a re-sent key (as the HostAgent's journal keeps, in characters): an
 * exec's can be 2 MiB, and 2,000 of them kept an hour would be gigabytes of this process. A larger
 * one is answered that the command already ran.
 */
const MAX_KEPT_OUTCOME_CHARS = 64 * 1024;
const TOO_LARGE_TO_KEEP: Outcome = {
  ok: false,
  error: {
    code: "conflict",
    message: "the command already ran; its result was too large to keep for a replay",
  },
};
const EVENT_GRACE_MS = 3_000;

/**
 * Runs control-plane calls against the handler table:
 * - params are parsed with the op's schema (never trusted);
 * - an idempotency key seen before returns the first run's outcome (a re-sent command runs once);
 * - each command has a timeout and an AbortSignal;
 * - every failure becomes a wire error with a shared code, never a crash.
 */
export class Dispatcher {
  private readonly seen = new Map<string, { at: number; outcome: Promise<Outcome> }>();
  private readonly busyPods = new Map<string, number>();
  private readonly finishedAt = new Map<string, number>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly shutdown = new AbortController();
  /** set by `drain`: what runs may finish, nothing new starts */
  private draining = false;

  constructor(
    private readonly handlers: HandlerTable,
    private readonly log: Logger,
  ) {}

  /**
   * Whether a command is working on this pod, or just finished: the container events that our own
   * command causes are not news (the command's result already carries the new state), and the
   * engine delivers them a moment after the command returns.
   */
  isBusy(pod: string): boolean {
    return (this.busyPods.get(pod) ?? 0) > 0 || (this.finishedAt.get(pod) ?? 0) > Date.now() - EVENT_GRACE_MS;
  }

  /** Whether a command is running on this pod right now (no grace period, unlike isBusy). */
  isWorking(pod: string): boolean {
    return (this.busyPods.get(pod) ?? 0) > 0;
  }

  async handle(call: Call): Promise<AgentResultMessage> {
    this.expireSeen();
    let entry = this.seen.get(call.idempotencyKey);
    if (!entry) {
      const fresh = { at: Date.now(), outcome: this.run(call) };
      this.seen.set(call.idempotencyKey, fresh);
      // Callers waiting now get the outcome whole; a key sent later hears only that it ran.
      void fresh.outcome.then((o) => {
        if (charsOver(o, MAX_KEPT_OUTCOME_CHARS)) fresh.outcome = Promise.resolve(TOO_LARGE_TO_KEEP);
      });
      entry = fresh;
    }
    const outcome = await entry.outcome;
    return outcome.ok
      ? { type: "agent:result", id: call.id, ok: true, data: outcome.data }
      : { type: "agent:result", id: call.id, ok: false, error: outcome.error };
  }

  /** Stop taking work, then wait (bounded) for what is running. */
  async drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    const all = Promise.allSettled([...this.inFlight]);
    await Promise.race([all, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
    this.shutdown.abort();
  }

  private run(call: Call): Promise<Outcome> {
    // Commands on one pod are serialised by the handlers' per-pod lock.
    const work = this.execute(call, podOfParams(call.params));
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
    return work;
  }

  private async execute(call: Call, pod: string | undefined): Promise<Outcome> {
    const started = Date.now();
    const log = this.log.child({ op: call.op, id: call.id, ...(pod ? { pod } : {}) });
    if (this.draining)
      return failure("unavailable", `the agent is shutting down; ${call.op} was not started (host)`, "host");
    const parsed = (ops[call.op].params as z.ZodType).safeParse(call.params);
    if (!parsed.success)
      return failure("bad_request", `invalid params for ${call.op}: ${parsed.error.message}`);

    const controller = new AbortController();
    const onShutdown = () =>
      controller.abort(new AgentError("unavailable", `the agent shut down during ${call.op} (host)`, "host"));
    this.shutdown.signal.addEventListener("abort", onShutdown);
    // The control plane names the server in front of a `host` failure (its agent does not know it).
    const timer = setTimeout(
      () => controller.abort(new AgentError("unavailable", timedOut(call.op, call.timeoutMs), "host")),
      call.timeoutMs,
    );
    if (pod) this.busyPods.set(pod, (this.busyPods.get(pod) ?? 0) + 1);
    try {
      const handler = this.handlers[call.op as Op] as (
        p: unknown,
        ctx: { signal: AbortSignal; log: Logger },
      ) => Promise<unknown>;
      const data = await Promise.race([
        handler(parsed.data, { signal: controller.signal, log }),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
        ),
      ]);
      log.info("command done", { ms: Date.now() - started });
      return { ok: true, data };
    } catch (error) {
      const outcome = toFailure(error, call.op, controller.signal.aborted);
      log.warn("command failed", {
        ms: Date.now() - started,
        code: outcome.error.code,
        error: outcome.error.message,
        ...(error instanceof AgentError ? {} : { raw: rawMessage(error) }),
      });
      return outcome;
    } finally {
      clearTimeout(timer);
      this.shutdown.signal.removeEventListener("abort", onShutdown);
      if (pod) {
        const n = (this.busyPods.get(pod) ?? 1) - 1;
        if (n > 0) this.busyPods.set(pod, n);
        else this.busyPods.delete(pod);
        this.finishedAt.set(pod, Date.now());
        if (this.finishedAt.size > IDEMPOTENCY_MAX) this.finishedAt.clear();
      }
    }
  }

  private expireSeen() {
    const cutoff = Date.now() - IDEMPOTENCY_TTL_MS;
    for (const [key, entry] of this.seen) {
      if (entry.at >= cutoff && this.seen.size <= IDEMPOTENCY_MAX) break;
      this.seen.delete(key);
    }
  }
}

const failure = (code: ErrorCode, message: string, component?: Component): Outcome => ({
  ok: false,
  error: { code, message, ...(component ? { component } : {}) },
});

/** Whether `value`'s strings and keys add up to more than `limit` characters (stops once they do). */
function charsOver(value: unknown, limit: number): boolean {
  let left = limit;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") left -= v.length;
    else if (Array.isArray(v)) {
      // each item is at least one character more: a long array is over before its items are looked at
      left -= v.length;
      if (left < 0) return true;
      for (const x of v) stack.push(x);
    } else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        left -= k.length + 1;
        stack.push(x);
      }
    } else left -= 8;
    if (left < 0) return true;
  }
  return false;
}

/** A command its timeout ended. */
const timedOut = (op: Op, timeoutMs: number) =>
  `the agent did not finish ${op} within ${durationText(timeoutMs)} (host)`;

function toFailure(error: unknown, op: Op, aborted: boolean): Extract<Outcome, { ok: false }> {
  // an answer never ends in an empty reason: the op and the host (whose agent gave none) stand in
  const blank = `${op} failed on the host without a reason (host)`;
  if (error instanceof AgentError)
    return {
      ok: false,
      error: {
        code: error.code,
        message: error.message.trim() ? error.message : blank,
        ...(error.component ? { component: error.component } : {}),
      },
    };
  // not one of ours (a handler's guard turns engine errors into AgentErrors): its words may name the
  // host's paths and ids, which the "command failed" log line keeps (`raw`) and the answer does not
  const raw = reasonOf(error, "");
  const code = aborted ? "unavailable" : "internal";
  if (!raw.trim()) return { ok: false, error: { code, message: blank, component: "host" } };
  return { ok: false, error: { code, message: withoutHostDetails(raw) } };
}

const rawMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));
