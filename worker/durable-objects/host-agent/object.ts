import { DurableObject } from "cloudflare:workers";
import { fail, type Result, reasonOf } from "../../../shared/errors";
import type { Op } from "../../../shared/protocol";
import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import { markHostOffline } from "../../services/hosts/hosts";
import { type ReconcileReport, type ReconcileTrigger, reconcileHost } from "../../services/reconcile/host";
import { onAgentMessage } from "./agent-messages";
import { typedOutcome } from "./client";
import { Commands, type Dispatched } from "./commands";
import type { Notify } from "./journal";
import { Lanes } from "./lanes";
import { Schedule } from "./schedule";
import { AgentSocket, attachmentOf } from "./socket";

export type { Dispatched } from "./commands";
export { MAX_CALLS_PER_POD, MAX_CALLS_PER_TEAM } from "./commands";
export type { Notify } from "./journal";

const LAST_RECONCILE = "lastReconcile";

/**
 * One per host. Holds the agent's WebSocket (hibernation API: an idle object is evicted while the
 * socket stays open), relays typed commands to the agent and their results back, and turns the
 * agent's own reports into D1 state. Its parts, beside it: the socket (./socket.ts), the commands
 * and their waiters (./commands.ts), the agent's messages (./agent-messages.ts), and what runs later
 * on the object's alarm (./schedule.ts).
 *
 * Commands are journaled in the object's SQLite storage under their idempotency key:
 * - a retry with a key already answered gets the recorded answer, without running again;
 * - a call caught by a disconnect is failed at once (`unavailable`) and never re-sent, so it ran at
 *   most once; the reconciliation on reconnect then corrects D1 from what the host really has;
 * - a result arriving after a wake-up (in-memory waiters gone) still lands in the journal.
 * A caller is never left hanging: every waiter has a timer, and the object stays resident while a
 * caller's RPC is in flight.
 *
 * Long operations (Workflows) do not wait on an RPC: they `dispatch` a command, which is journaled
 * with its params and where to report, and the outcome is sent to the workflow instance as an event
 * when the agent answers, however long that takes and whether or not this object slept meanwhile.
 * Such a command is not failed by a disconnect: it is sent again, with the same id and key, when the
 * agent says hello again, and the agent runs a key once (or, after its own restart, runs the
 * idempotent handler again). A result lost with a connection is therefore recovered too.
 */
export class HostAgent extends DurableObject<Bindings> {
  private readonly agent: AgentSocket;
  private readonly commands: Commands;
  /** alert timers and the reconciler's next pass, on the object's alarm */
  private readonly schedule: Schedule;
  private readonly lanes = new Lanes();

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.agent = new AgentSocket(ctx);
    this.commands = new Commands(ctx.storage, env, this.agent);
    this.schedule = new Schedule(ctx, env);
  }

  /** The agent's WebSocket upgrade, already authenticated by the Worker (which names the host). */
  override async fetch(request: Request): Promise<Response> {
    return this.agent.accept(request, () =>
      this.commands.failAll("reconnected; the command's outcome is unknown"),
    );
  }

  /**
   * RPC from the Worker: run `op` on the host and wait for its answer. One pod gets at most
   * MAX_CALLS_PER_POD commands in progress at a time, and one team's pods on this host together
   * MAX_CALLS_PER_TEAM (./in-flight.ts): the rest answer 429.
   */
  async call(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string; teamId?: string },
  ): Promise<Result<unknown>> {
    return this.commands.call(op, params, options);
  }

  /**
   * RPC from a workflow step: send `op` to the host and return at once; the outcome is sent to
   * `notify` as an event. The same key again (a retried step, a later attempt) never starts a second
   * run: a settled command answers from the journal, a pending one is sent again under its first id
   * (the agent joins the run in progress or answers from its own record).
   */
  async dispatch(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string; notify: Notify },
  ): Promise<Dispatched> {
    return this.commands.dispatch(op, params, options);
  }

  /**
   * RPC: one pass of the reconciler over this host (services/reconcile/host.ts), its report kept as
   * the host's latest. An operator's; the hello and the timer run it too (`reconcileQuietly`).
   */
  async reconcile(
    trigger: ReconcileTrigger,
    options: { dryRun?: boolean; graceMs?: number } = {},
  ): Promise<Result<ReconcileReport>> {
    const hostId = await this.agent.hostId();
    if (!hostId) return fail("unavailable", await this.agent.notConnected());
    const report = await reconcileHost({
      env: this.env,
      db: createDb(this.env.DB),
      input: { host: hostId, trigger, ...options },
      call: async (params, timeoutMs) =>
        typedOutcome(
          "host.reconcile",
          await this.call("host.reconcile", params, { timeoutMs, idempotencyKey: crypto.randomUUID() }),
        ),
    });
    if (report.ok) await this.ctx.storage.put(LAST_RECONCILE, report.value);
    return report;
  }

  /** RPC: the report of the host's latest reconciler pass (any trigger), or null before the first. */
  async lastReconcile(): Promise<ReconcileReport | null> {
    return (await this.ctx.storage.get<ReconcileReport>(LAST_RECONCILE)) ?? null;
  }

  /** A pass nobody waits for: its failure is logged, and the next pass tries again. */
  private async reconcileQuietly(trigger: ReconcileTrigger): Promise<void> {
    const done = await this.reconcile(trigger).catch((error: unknown) => fail("internal", String(error)));
    if (!done.ok)
      console.warn(JSON.stringify({ msg: "reconcile: pass failed", trigger, error: done.message }));
  }

  /** RPC: whether an agent is connected right now. */
  async connected(): Promise<boolean> {
    return this.agent.open() !== undefined;
  }

  override async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    await onAgentMessage(
      {
        env: this.env,
        agent: this.agent,
        commands: this.commands,
        schedule: this.schedule,
        reconcileInBackground: (trigger) => this.ctx.waitUntil(this.reconcileQuietly(trigger)),
        lanes: this.lanes,
      },
      ws,
      raw,
    );
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    await this.disconnected(ws, `disconnected (code ${code})`);
    // 1005/1006 are not valid close codes to send back.
    try {
      ws.close(1000, "closing");
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
    await this.disconnected(ws, `lost its connection (${reasonOf(error, "no reason given")})`);
  }

  override async alarm(): Promise<void> {
    await this.commands.prune();
    await this.schedule.runDue(await this.agent.hostId(), {
      connected: () => this.agent.open() !== undefined,
      reconcile: (trigger) => this.reconcileQuietly(trigger),
    });
  }

  private async disconnected(ws: WebSocket, reason: string) {
    const { hostId } = attachmentOf(ws);
    // A replaced socket's close can come long after its successor was accepted (which failed the
    // calls sent on it): what is pending now went out on the open successor and stays its own.
    if (this.agent.replaced(ws)) return;
    this.commands.failAll(`${reason}; the command's outcome is unknown`);
    await markHostOffline(createDb(this.env.DB), hostId);
    await this.schedule.hostGone();
  }
}
