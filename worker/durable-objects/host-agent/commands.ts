import { durationText, type Failure, fail, type Result, rateLimited } from "../../../shared/errors";
import { isUnjournaledOp, type Op, podOfParams } from "../../../shared/protocol";
import type { Bindings } from "../../env";
import { InFlight } from "./in-flight";
import { JOURNAL_RETENTION_MS, Journal, type Notify } from "./journal";
import { notifyWorkflow } from "./notify";
import type { AgentSocket } from "./socket";

interface Pending {
  resolve: (result: Result<unknown>) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** What `dispatch` did: answered from the journal, sent (the outcome comes as an event), or not sent. */
export type Dispatched =
  | { state: "settled"; outcome: Result<unknown> }
  | { state: "sent" }
  | { state: "unavailable"; message: string };

/** commands one pod may have in progress on its host at once (the rest answer 429) */
export const MAX_CALLS_PER_POD = 8;
/** commands one team's pods together may have in progress on one host at once */
export const MAX_CALLS_PER_TEAM = 16;

/**
 * The HostAgent's commands to its agent: sending them, journaling them under their idempotency key
 * (./journal.ts), the callers waiting on them, and settling each once when its answer comes, by
 * waking its waiter or telling its workflow. The object's doc comment (./object.ts) says the rules.
 */
export class Commands {
  private readonly pending = new Map<string, Pending>();
  /** in-flight unjournaled calls (reads, unreplayed commands) and their op */
  private readonly unjournaled = new Map<string, Op>();
  private cleanupScheduled = false;

  private readonly journal: Journal;
  /** commands in progress per pod and per team */
  private readonly inFlight = new InFlight({ perPod: MAX_CALLS_PER_POD, perTeam: MAX_CALLS_PER_TEAM });

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly env: Bindings,
    private readonly agent: AgentSocket,
  ) {
    this.journal = new Journal(storage.sql);
  }

  /**
   * Runs `op` on the host and waits for its answer. One pod gets at most MAX_CALLS_PER_POD commands
   * in progress at a time, and one team's pods on this host together MAX_CALLS_PER_TEAM
   * (./in-flight.ts): the rest answer 429.
   */
  async call(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string; teamId?: string },
  ): Promise<Result<unknown>> {
    const place = this.inFlight.enter(podOfParams(params), options.teamId);
    if ("refused" in place) return rateLimited(`${place.refused}; retry in a second`, 1);
    try {
      return await this.callOnce(op, params, options);
    } finally {
      place.leave();
    }
  }

  private async callOnce(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string },
  ): Promise<Result<unknown>> {
    if (isUnjournaledOp(op)) return this.callUnjournaled(op, params, options);
    const previous = this.journal.byKey(options.idempotencyKey);
    if (previous?.outcome) return previous.outcome;
    if (previous && this.pending.has(previous.id)) return this.wait(previous.id, op, options.timeoutMs);
    if (previous) {
      // Its waiter died with an earlier instance (a reset): it must not run again, and every retry
      // must hear the same answer, even if the agent's result for the first attempt arrives later.
      const interrupted: Failure = {
        ...fail(
          "unavailable",
          `the control plane restarted during ${op}'s earlier attempt; its outcome is unknown (control plane)`,
        ),
        component: "control_plane",
      };
      void this.settle(previous.id, interrupted);
      return interrupted;
    }

    const socket = this.agent.open();
    if (!socket) return fail("unavailable", await this.agent.notConnected());

    const id = crypto.randomUUID();
    this.journal.recordCall(id, options.idempotencyKey, op);
    const waiting = this.wait(id, op, options.timeoutMs);
    this.agent.sendCall(socket, id, op, params, options);
    await this.scheduleCleanup();
    return waiting;
  }

  /**
   * Sends `op` to the host and returns at once; the outcome is sent to `notify` as an event. The same
   * key again (a retried step, a later attempt) never starts a second run: a settled command answers
   * from the journal, a pending one is sent again under its first id (the agent joins the run in
   * progress or answers from its own record).
   */
  async dispatch(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string; notify: Notify },
  ): Promise<Dispatched> {
    const previous = this.journal.byKey(options.idempotencyKey);
    if (previous?.outcome) return { state: "settled", outcome: previous.outcome };
    const socket = this.agent.open();
    if (!socket) return { state: "unavailable", message: await this.agent.notConnected() };
    const id = previous?.id ?? crypto.randomUUID();
    this.journal.recordDispatch({
      id,
      idempotencyKey: options.idempotencyKey,
      op,
      params,
      timeoutMs: options.timeoutMs,
      notify: options.notify,
      existing: Boolean(previous),
    });
    this.agent.sendCall(socket, id, op, params, options);
    await this.scheduleCleanup();
    return { state: "sent" };
  }

  /**
   * Reads change nothing on the host, so running one twice is harmless; a command whose outcome is
   * never replayed (`pod.exec`: its key is fresh per request) would only write rows nobody reads. So:
   * no journal, no storage writes on the hot path (one WebSocket round trip). A disconnect still
   * fails the waiter at once (failAll), and the agent still runs a key once.
   */
  private async callUnjournaled(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string },
  ): Promise<Result<unknown>> {
    const socket = this.agent.open();
    if (!socket) return fail("unavailable", await this.agent.notConnected());
    const id = crypto.randomUUID();
    this.unjournaled.set(id, op);
    const waiting = this.wait(id, op, options.timeoutMs);
    this.agent.sendCall(socket, id, op, params, options);
    try {
      return await waiting;
    } finally {
      this.unjournaled.delete(id);
    }
  }

  /** The op of a command in progress (journaled or not), to know what its result means. */
  opOf(id: string): Op | undefined {
    const unjournaled = this.unjournaled.get(id);
    if (unjournaled) return unjournaled;
    return this.journal.opOf(id);
  }

  private wait(id: string, op: Op, timeoutMs: number): Promise<Result<unknown>> {
    return new Promise((resolve) => {
      const existing = this.pending.get(id);
      const timer = setTimeout(
        () => void this.hostFailed(id, `did not answer ${op} within ${durationText(timeoutMs)}`),
        timeoutMs + 1_000, // the agent times out first and reports why
      );
      this.pending.set(id, {
        timer,
        resolve: (result) => {
          existing?.resolve(result);
          resolve(result);
        },
      });
      if (existing) clearTimeout(existing.timer);
    });
  }

  /** Records the outcome once (later copies change nothing), then wakes the waiter or the workflow. */
  async settle(id: string, outcome: Result<unknown>) {
    const { notify } = this.journal.settle(id, outcome);
    const waiter = this.pending.get(id);
    if (waiter) {
      clearTimeout(waiter.timer);
      this.pending.delete(id);
      waiter.resolve(outcome);
    }
    if (notify) await notifyWorkflow(this.env, notify, outcome);
  }

  /** After a (re)connect: every dispatched command still without an outcome goes out again. */
  resendDispatched(ws: WebSocket) {
    for (const d of this.journal.pendingDispatches()) this.agent.sendCall(ws, d.id, d.op, d.params, d);
  }

  /**
   * Fails every caller still waiting (the connection their command went out on is gone), saying what
   * became of the server's agent: "server fra-1's agent `what` (host)".
   */
  failAll(what: string) {
    for (const id of [...this.pending.keys()]) void this.hostFailed(id, what);
  }

  /** Settles `id` as the host's own failure (component `host`), naming the server and the op. */
  private async hostFailed(id: string, what: string) {
    const reason = await this.agent.hostReason(what);
    await this.settle(id, { ...fail("unavailable", reason), component: "host" });
  }

  /** The alarm's part: old journal rows go, and the next command schedules the next cleanup. */
  async prune() {
    this.cleanupScheduled = false;
    const server = await this.agent.serverName();
    this.journal.prune(server ? `server ${server}'s` : "the server's");
  }

  private async scheduleCleanup() {
    if (this.cleanupScheduled) return;
    if ((await this.storage.getAlarm()) === null) {
      await this.storage.setAlarm(Date.now() + JOURNAL_RETENTION_MS);
    }
    this.cleanupScheduled = true;
  }
}
