import { DurableObject } from "cloudflare:workers";
import { fail, ok, type Result, rateLimited } from "../../../shared/errors";
import {
  AgentMessage,
  type ControlMessage,
  isUnjournaledOp,
  type Op,
  PodState,
  PROTOCOL_VERSION,
  podOfParams,
} from "../../../shared/protocol";
import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import { hostLostAfterMs, unhealthyAfterMs } from "../../services/alerts/events";
import { alertOnService } from "../../services/alerts/hooks";
import {
  alertOnDiskUse,
  alertOnHostLost,
  alertOnLastingDiagnosis,
  alertOnPodStatus,
  resolveHostLost,
  resolveUnhealthy,
} from "../../services/alerts/host-reports";
import { recordDeployLog } from "../../services/git/log";
import { applyHealthReports } from "../../services/health/report";
import { markHostOffline, markHostOnline, setHostProblem, touchHost } from "../../services/hosts/hosts";
import { recordMetrics } from "../../services/metrics/record";
import {
  RECONCILE_EVERY_MS,
  type ReconcileReport,
  type ReconcileTrigger,
  reconcileHost,
} from "../../services/reconcile/host";
import { typedOutcome } from "./client";
import { InFlight } from "./in-flight";
import { JOURNAL_RETENTION_MS, Journal, type Notify } from "./journal";
import { Timers } from "./timers";

export type { Notify } from "./journal";

import { applyPodState, reconcileInventory } from "../../services/pods/host-sync";
import { applySidecarReports } from "../../services/services/sidecars";

interface Pending {
  resolve: (result: Result<unknown>) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Attachment {
  hostId: string;
  connectedAt: number;
  /**
   * When a heartbeat last wrote the host's last_seen_at. Kept on the socket, not in the object: a
   * hibernating object is evicted between two heartbeats (~10 s idle, pings every 15 s), so a field
   * of the object would start at 0 on every wake and each heartbeat would write D1.
   */
  lastSeenAt?: number;
}

/** What `dispatch` did: answered from the journal, sent (the outcome comes as an event), or not sent. */
export type Dispatched =
  | { state: "settled"; outcome: Result<unknown> }
  | { state: "sent" }
  | { state: "unavailable"; message: string };

/** Ops whose result is a PodState that the DO writes to D1. */
const POD_STATE_OPS = new Set<Op>([
  "pod.create",
  "pod.start",
  "pod.stop",
  "pod.restart",
  "pod.inspect",
  "pod.resize",
  "pod.clone",
]);

const LAST_SEEN_EVERY_MS = 30_000;
const HOST_LOST_TIMER = "host-lost";
const UNHEALTHY_TIMER = "unhealthy:";
/** the reconciler's next pass while the agent stays connected (services/reconcile/host.ts) */
const RECONCILE_TIMER = "reconcile";
const LAST_RECONCILE = "lastReconcile";
/** commands one pod may have in progress on its host at once (the rest answer 429) */
export const MAX_CALLS_PER_POD = 8;
/** commands one team's pods together may have in progress on one host at once */
export const MAX_CALLS_PER_TEAM = 16;

/**
 * One per host. Holds the agent's WebSocket (hibernation API: an idle object is evicted while the
 * socket stays open), relays typed commands to the agent and their results back, and turns the
 * agent's own reports into D1 state.
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
  private readonly pending = new Map<string, Pending>();
  /** in-flight unjournaled calls (reads, unreplayed commands) and their op */
  private readonly unjournaled = new Map<string, Op>();
  private cleanupScheduled = false;

  private readonly journal: Journal;
  /** alert timers (./timers.ts): a lasting diagnosis, a lost agent */
  private readonly timers: Timers;
  /** commands in progress per pod and per team */
  private readonly inFlight = new InFlight({ perPod: MAX_CALLS_PER_POD, perTeam: MAX_CALLS_PER_TEAM });

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.journal = new Journal(ctx.storage.sql);
    this.timers = new Timers(ctx.storage.sql);
  }

  /** The agent's WebSocket upgrade, already authenticated by the Worker (which names the host). */
  override async fetch(request: Request): Promise<Response> {
    const hostId = request.headers.get("x-podhost-host-id");
    if (request.headers.get("upgrade") !== "websocket" || !hostId) {
      return new Response(JSON.stringify({ error: "expected an agent WebSocket upgrade" }), { status: 400 });
    }
    // One agent per host: a new connection replaces an old one (e.g. after a network partition).
    for (const old of this.ctx.getWebSockets()) {
      this.failAllPending("host agent reconnected; the command's outcome is unknown");
      old.close(1000, "replaced by a newer connection");
    }
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ hostId, connectedAt: Date.now() } satisfies Attachment);
    await this.ctx.storage.put("hostId", hostId);
    const hostName = request.headers.get("x-podhost-host-name");
    if (hostName) await this.ctx.storage.put("hostName", hostName);
    return new Response(null, { status: 101, webSocket: client });
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
    if (previous && this.pending.has(previous.id)) return this.wait(previous.id, options.timeoutMs);
    if (previous) {
      // Its waiter died with an earlier instance (a reset): it must not run again, and every retry
      // must hear the same answer, even if the agent's result for the first attempt arrives later.
      const interrupted = fail(
        "unavailable",
        "the command's earlier attempt was interrupted; its outcome is unknown",
      );
      void this.settle(previous.id, interrupted);
      return interrupted;
    }

    const socket = this.socket();
    if (!socket) return fail("unavailable", await this.notConnected());

    const id = crypto.randomUUID();
    this.journal.recordCall(id, options.idempotencyKey, op);
    const waiting = this.wait(id, options.timeoutMs);
    this.sendCall(socket, id, op, params, options);
    await this.scheduleCleanup();
    return waiting;
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
    const previous = this.journal.byKey(options.idempotencyKey);
    if (previous?.outcome) return { state: "settled", outcome: previous.outcome };
    const socket = this.socket();
    if (!socket) return { state: "unavailable", message: await this.notConnected() };
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
    this.sendCall(socket, id, op, params, options);
    await this.scheduleCleanup();
    return { state: "sent" };
  }

  /**
   * Reads change nothing on the host, so running one twice is harmless; a command whose outcome is
   * never replayed (`pod.exec`: its key is fresh per request) would only write rows nobody reads. So:
   * no journal, no storage writes on the hot path (one WebSocket round trip). A disconnect still
   * fails the waiter at once (failAllPending), and the agent still runs a key once.
   */
  private async callUnjournaled(
    op: Op,
    params: unknown,
    options: { timeoutMs: number; idempotencyKey: string },
  ): Promise<Result<unknown>> {
    const socket = this.socket();
    if (!socket) return fail("unavailable", await this.notConnected());
    const id = crypto.randomUUID();
    this.unjournaled.set(id, op);
    const waiting = this.wait(id, options.timeoutMs);
    this.sendCall(socket, id, op, params, options);
    try {
      return await waiting;
    } finally {
      this.unjournaled.delete(id);
    }
  }

  /**
   * RPC: one pass of the reconciler over this host (services/reconcile/host.ts), its report kept as
   * the host's latest. An operator's; the hello and the timer run it too (`reconcileQuietly`).
   */
  async reconcile(
    trigger: ReconcileTrigger,
    options: { dryRun?: boolean; graceMs?: number } = {},
  ): Promise<Result<ReconcileReport>> {
    const hostId = await this.ctx.storage.get<string>("hostId");
    if (!hostId) return fail("unavailable", await this.notConnected());
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
    return this.socket() !== undefined;
  }

  override async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    const attachment = ws.deserializeAttachment() as Attachment;
    let message: AgentMessage;
    try {
      const parsed = AgentMessage.safeParse(
        JSON.parse(typeof raw === "string" ? raw : new TextDecoder().decode(raw)),
      );
      if (!parsed.success) throw new Error(parsed.error.message);
      message = parsed.data;
    } catch (error) {
      console.warn(
        JSON.stringify({ hostId: attachment.hostId, msg: "unparseable agent message", error: String(error) }),
      );
      return;
    }
    const db = createDb(this.env.DB);
    switch (message.type) {
      case "agent:hello": {
        if (message.protocol !== PROTOCOL_VERSION) {
          ws.close(
            4000,
            `protocol ${message.protocol} not supported; this control plane speaks ${PROTOCOL_VERSION}`,
          );
          return;
        }
        await markHostOnline(db, attachment.hostId, message.agentVersion, message.problem);
        this.timers.clear(HOST_LOST_TIMER);
        const { orphans, changes } = await reconcileInventory(db, attachment.hostId, message.inventory);
        this.send(ws, { type: "control:welcome", hostId: attachment.hostId, orphans });
        this.resendDispatched(ws);
        await resolveHostLost(this.env, db, attachment.hostId);
        await alertOnPodStatus(this.env, db, changes);
        // drift the host gathered while it was away (or ever): now, then every RECONCILE_EVERY_MS
        this.timers.start(RECONCILE_TIMER, Date.now() + RECONCILE_EVERY_MS);
        await this.armTimers();
        this.ctx.waitUntil(this.reconcileQuietly("hello"));
        return;
      }
      case "agent:result": {
        const outcome: Result<unknown> = message.ok
          ? ok(message.data)
          : {
              ...fail(message.error.code, message.error.message),
              ...(message.error.component ? { component: message.error.component } : {}),
            };
        // The host's answer about a container is the truth about the pod: D1 first, then the waiter,
        // so the caller reads the new state.
        const op = this.journaledOp(message.id);
        const state =
          outcome.ok && op && POD_STATE_OPS.has(op) ? PodState.safeParse(outcome.value) : undefined;
        if (state?.success) {
          const settlesCreation = op === "pod.create" || op === "pod.clone";
          // A look that finds no container is news worth an event; other results are the command's own.
          const reason =
            state.data.state === "missing" ? "the pod's container is missing on its host" : undefined;
          const change = await applyPodState(db, attachment.hostId, state.data, { settlesCreation, reason });
          await this.settle(message.id, outcome);
          if (change) await alertOnPodStatus(this.env, db, [change]);
          return;
        }
        await this.settle(message.id, outcome);
        return;
      }
      case "agent:pod-status": {
        const change = await applyPodState(db, attachment.hostId, message.pod, {
          reason: message.reason ?? "reported by the host",
        });
        if (change) await alertOnPodStatus(this.env, db, [change]);
        return;
      }
      // Periodic reports, written for the pods of this host only (the services scope by host id).
      case "agent:metrics":
        await alertOnDiskUse(this.env, db, await recordMetrics(db, attachment.hostId, message.samples));
        return;
      case "agent:health": {
        const changes = await applyHealthReports(db, attachment.hostId, message.pods);
        await this.healthChanged(db, attachment.hostId, changes.unhealthy, changes.recovered);
        return;
      }
      // The database sidecars of its running pods: a service that fails after its install, and back.
      case "agent:services":
        for (const serviceId of await applySidecarReports(db, attachment.hostId, message.pods))
          await alertOnService(this.env, db, serviceId);
        return;
      case "agent:host-health":
        await setHostProblem(db, attachment.hostId, message.problem);
        return;
      // A running deploy's output, stored as it comes (deduplicated, capped, this host's pods only).
      case "agent:deploy-log":
        await recordDeployLog(db, attachment.hostId, message);
        return;
      case "agent:ping":
        this.send(ws, { type: "control:pong", at: message.at });
        if (Date.now() - (attachment.lastSeenAt ?? 0) > LAST_SEEN_EVERY_MS) {
          ws.serializeAttachment({ ...attachment, lastSeenAt: Date.now() } satisfies Attachment);
          await touchHost(db, attachment.hostId);
        }
        return;
    }
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    await this.disconnected(ws, `agent disconnected (${code})`);
    // 1005/1006 are not valid close codes to send back.
    try {
      ws.close(1000, "closing");
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
    await this.disconnected(ws, `agent connection failed: ${String(error)}`);
  }

  override async alarm(): Promise<void> {
    this.cleanupScheduled = false;
    this.journal.prune();
    const hostId = await this.ctx.storage.get<string>("hostId");
    const due = this.timers.takeDue(Date.now());
    if (hostId && due.length > 0) {
      const db = createDb(this.env.DB);
      for (const key of due) {
        if (key === HOST_LOST_TIMER) {
          // gone for the whole wait: a reconnect meanwhile cleared the timer
          if (!this.socket()) await alertOnHostLost(this.env, db, hostId, hostLostAfterMs(this.env));
        } else if (key.startsWith(UNHEALTHY_TIMER)) {
          const podId = key.slice(UNHEALTHY_TIMER.length);
          await alertOnLastingDiagnosis(this.env, db, hostId, podId, unhealthyAfterMs(this.env));
        } else if (key === RECONCILE_TIMER && this.socket()) {
          // the next pass is timed from this one's start; a disconnect stops them until the hello
          this.timers.start(RECONCILE_TIMER, Date.now() + RECONCILE_EVERY_MS);
          await this.reconcileQuietly("periodic");
        }
      }
    }
    await this.armTimers();
  }

  /**
   * Apps that became unhealthy alert if they stay so for ALERT_UNHEALTHY_AFTER_S (a timer each; at
   * once when it is 0); recovered ones cancel theirs and close their incident.
   */
  private async healthChanged(
    db: ReturnType<typeof createDb>,
    hostId: string,
    unhealthy: string[],
    recovered: string[],
  ) {
    const afterMs = unhealthyAfterMs(this.env);
    for (const podId of recovered) this.timers.clear(`${UNHEALTHY_TIMER}${podId}`);
    await resolveUnhealthy(this.env, db, recovered);
    if (unhealthy.length === 0) return;
    if (afterMs === 0) {
      for (const podId of unhealthy) await alertOnLastingDiagnosis(this.env, db, hostId, podId, 0);
      return;
    }
    for (const podId of unhealthy) this.timers.start(`${UNHEALTHY_TIMER}${podId}`, Date.now() + afterMs);
    await this.armTimers();
  }

  /** The object's one alarm at the earliest timer (an earlier alarm, the journal's cleanup, stays). */
  private async armTimers() {
    const next = this.timers.next();
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || next < current) await this.ctx.storage.setAlarm(next);
  }

  private async disconnected(ws: WebSocket, reason: string) {
    const { hostId } = ws.deserializeAttachment() as Attachment;
    // A replaced socket's close can come long after its successor was accepted (which failed the
    // calls sent on it): what is pending now went out on the open successor and stays its own.
    const stillConnected = this.ctx.getWebSockets().some((s) => s !== ws && s.readyState === WebSocket.OPEN);
    if (stillConnected) return;
    this.failAllPending(`the pod's host agent disconnected: ${reason}`);
    await markHostOffline(createDb(this.env.DB), hostId);
    // Its pods' teams hear if it stays gone (host_lost); a hello first clears the timer.
    this.timers.start(HOST_LOST_TIMER, Date.now() + hostLostAfterMs(this.env));
    await this.armTimers();
  }

  /** Why nothing can be sent, naming the server (as its operator and the pod's owner know it). */
  private async notConnected(): Promise<string> {
    const name =
      (await this.ctx.storage.get<string>("hostName")) ?? (await this.ctx.storage.get<string>("hostId"));
    return name
      ? `server ${name} is unavailable: its agent is not connected; try again shortly`
      : "the server's agent has not connected yet; try again shortly";
  }

  private journaledOp(id: string): Op | undefined {
    const unjournaled = this.unjournaled.get(id);
    if (unjournaled) return unjournaled;
    return this.journal.opOf(id);
  }

  private socket(): WebSocket | undefined {
    return this.ctx.getWebSockets().find((ws) => ws.readyState === WebSocket.OPEN);
  }

  private send(ws: WebSocket, message: ControlMessage) {
    ws.send(JSON.stringify(message));
  }

  private sendCall(
    ws: WebSocket,
    id: string,
    op: Op,
    params: unknown,
    options: { idempotencyKey: string; timeoutMs: number },
  ) {
    const { idempotencyKey, timeoutMs } = options;
    this.send(ws, { type: "control:call", id, idempotencyKey, op, params, timeoutMs });
  }

  private wait(id: string, timeoutMs: number): Promise<Result<unknown>> {
    return new Promise((resolve) => {
      const existing = this.pending.get(id);
      const timer = setTimeout(
        () =>
          void this.settle(
            id,
            fail("unavailable", `the host did not answer within ${Math.round(timeoutMs / 1000)} s`),
          ),
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
  private async settle(id: string, outcome: Result<unknown>) {
    const { notify } = this.journal.settle(id, outcome);
    const waiter = this.pending.get(id);
    if (waiter) {
      clearTimeout(waiter.timer);
      this.pending.delete(id);
      waiter.resolve(outcome);
    }
    if (notify) await this.notify(notify, outcome);
  }

  private async notify(target: Notify, outcome: Result<unknown>) {
    try {
      const instance = await this.env[target.workflow].get(target.instanceId);
      // JSON text: a Result's `unknown` value is not a type workflow events can declare.
      await instance.sendEvent({ type: target.type, payload: JSON.stringify(outcome) });
    } catch (error) {
      // The instance is gone (terminated, or never made): nobody is waiting for this outcome.
      console.warn(
        JSON.stringify({ ...target, msg: "could not deliver a host outcome", error: String(error) }),
      );
    }
  }

  /** After a (re)connect: every dispatched command still without an outcome goes out again. */
  private resendDispatched(ws: WebSocket) {
    for (const d of this.journal.pendingDispatches()) this.sendCall(ws, d.id, d.op, d.params, d);
  }

  private failAllPending(message: string) {
    for (const id of [...this.pending.keys()]) void this.settle(id, fail("unavailable", message));
  }

  private async scheduleCleanup() {
    if (this.cleanupScheduled) return;
    if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(Date.now() + JOURNAL_RETENTION_MS);
    }
    this.cleanupScheduled = true;
  }
}
