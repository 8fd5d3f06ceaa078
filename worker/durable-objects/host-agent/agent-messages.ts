import { type Component, type Failure, fail, ok, type Result } from "../../../shared/errors";
import { AgentMessage, type Op, PodState, PROTOCOL_VERSION, type WireError } from "../../../shared/protocol";
import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import { alertOnService } from "../../services/alerts/hooks";
import { alertOnDiskUse, alertOnPodStatus, resolveHostLost } from "../../services/alerts/host-reports";
import { recordDeployLog } from "../../services/git/log";
import { applyHealthReports } from "../../services/health/report";
import { markHostOnline, setHostProblem, touchHost } from "../../services/hosts/hosts";
import { recordMetrics } from "../../services/metrics/record";
import { applyPodState, reconcileInventory } from "../../services/pods/host-sync";
import type { ReconcileTrigger } from "../../services/reconcile/host";
import { applySidecarReports } from "../../services/services/sidecars";
import type { Commands } from "./commands";
import type { Lanes } from "./lanes";
import type { Schedule } from "./schedule";
import { type AgentSocket, type Attachment, attachmentOf } from "./socket";

/** What the agent's messages act on: the HostAgent's parts. */
export interface AgentMessageContext {
  env: Bindings;
  agent: AgentSocket;
  commands: Commands;
  schedule: Schedule;
  /** a reconciler pass nobody waits for, kept alive past the message */
  reconcileInBackground: (trigger: ReconcileTrigger) => void;
  /** the agent's reports of one kind, applied one at a time in the order they came (./lanes.ts) */
  lanes: Lanes;
}

type Db = ReturnType<typeof createDb>;

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

/** Reports whose later one must win: each kind is applied in arrival order (commands' results are each one's own). */
const ORDERED = new Set<AgentMessage["type"]>([
  "agent:pod-status",
  "agent:metrics",
  "agent:health",
  "agent:services",
  "agent:host-health",
  "agent:deploy-log",
]);

/**
 * One message from the agent, parsed at the boundary (an unparseable one is logged and dropped):
 * its hello, the results of commands, and its own reports, turned into D1 state and alerts.
 */
export async function onAgentMessage(
  host: AgentMessageContext,
  ws: WebSocket,
  raw: string | ArrayBuffer,
): Promise<void> {
  const attachment = attachmentOf(ws);
  let message: AgentMessage;
  try {
    const parsed = AgentMessage().safeParse(
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
  if (ORDERED.has(message.type))
    return host.lanes.run(message.type, () => apply(host, ws, attachment, message));
  return apply(host, ws, attachment, message);
}

async function apply(
  host: AgentMessageContext,
  ws: WebSocket,
  attachment: Attachment,
  message: AgentMessage,
) {
  const { env } = host;
  const db = createDb(env.DB);
  switch (message.type) {
    case "agent:hello":
      return hello(host, db, ws, attachment, message);
    case "agent:result":
      return result(host, db, attachment, message);
    case "agent:pod-status": {
      const change = await applyPodState(db, attachment.hostId, message.pod, {
        reason: message.reason ?? "reported by the host",
      });
      if (change) await alertOnPodStatus(env, db, [change]);
      return;
    }
    // Periodic reports, written for the pods of this host only (the services scope by host id).
    case "agent:metrics":
      await alertOnDiskUse(env, db, await recordMetrics(db, attachment.hostId, message.samples));
      return;
    case "agent:health": {
      const changes = await applyHealthReports(db, attachment.hostId, message.pods);
      await host.schedule.healthChanged(db, attachment.hostId, changes.unhealthy, changes.recovered);
      return;
    }
    // The database sidecars of its running pods: a service that fails after its install, and back.
    case "agent:services":
      for (const serviceId of await applySidecarReports(db, attachment.hostId, message.pods))
        await alertOnService(env, db, serviceId);
      return;
    case "agent:host-health":
      await setHostProblem(db, attachment.hostId, message.problem);
      return;
    // A running deploy's output, stored as it comes (deduplicated, capped, this host's pods only).
    case "agent:deploy-log":
      await recordDeployLog(db, attachment.hostId, message);
      return;
    case "agent:ping":
      host.agent.send(ws, { type: "control:pong", at: message.at });
      if (Date.now() - (attachment.lastSeenAt ?? 0) > LAST_SEEN_EVERY_MS) {
        ws.serializeAttachment({ ...attachment, lastSeenAt: Date.now() } satisfies Attachment);
        await touchHost(db, attachment.hostId);
      }
      return;
  }
}

/**
 * The agent (re)connected: the host is online with what it holds; dispatched commands still without
 * an outcome go out again; the reconciler runs now and then every RECONCILE_EVERY_MS.
 */
async function hello(
  host: AgentMessageContext,
  db: Db,
  ws: WebSocket,
  attachment: Attachment,
  message: Extract<AgentMessage, { type: "agent:hello" }>,
) {
  if (message.protocol !== PROTOCOL_VERSION) {
    ws.close(
      4000,
      `protocol ${message.protocol} not supported; this control plane speaks ${PROTOCOL_VERSION}`,
    );
    return;
  }
  await markHostOnline(db, attachment.hostId, message.agentVersion, message.problem);
  host.schedule.hostBack();
  const { orphans, changes } = await reconcileInventory(db, attachment.hostId, message.inventory);
  host.agent.send(ws, { type: "control:welcome", hostId: attachment.hostId, orphans });
  host.commands.resendDispatched(ws);
  await resolveHostLost(host.env, db, attachment.hostId);
  await alertOnPodStatus(host.env, db, changes);
  // drift the host gathered while it was away (or ever): now, then every RECONCILE_EVERY_MS
  await host.schedule.reconcileLater();
  host.reconcileInBackground("hello");
}

/** A command's answer: settles it once, after writing a pod's new state to D1. */
async function result(
  host: AgentMessageContext,
  db: Db,
  attachment: Attachment,
  message: Extract<AgentMessage, { type: "agent:result" }>,
) {
  const op = host.commands.opOf(message.id);
  const outcome: Result<unknown> = message.ok ? ok(message.data) : await failureOf(host, message.error, op);
  // The host's answer about a container is the truth about the pod: D1 first, then the waiter,
  // so the caller reads the new state.
  const state = outcome.ok && op && POD_STATE_OPS.has(op) ? PodState.safeParse(outcome.value) : undefined;
  if (state?.success) {
    const settlesCreation = op === "pod.create" || op === "pod.clone";
    // A look that finds no container is news worth an event; other results are the command's own.
    const reason = state.data.state === "missing" ? "the pod's container is missing on its host" : undefined;
    const change = await applyPodState(db, attachment.hostId, state.data, { settlesCreation, reason });
    await host.commands.settle(message.id, outcome);
    if (change) await alertOnPodStatus(host.env, db, [change]);
    return;
  }
  await host.commands.settle(message.id, outcome);
}

/**
 * A host's failure as its caller reads it: one of the host's own (its agent timed out, shut down)
 * names the server, which the agent does not know; a blank one (an older agent's) says whose it is.
 */
async function failureOf(host: AgentMessageContext, error: WireError, op: Op | undefined): Promise<Failure> {
  if (!error.message.trim())
    return {
      ...fail(error.code, await host.agent.hostReason(`failed ${op ?? "a command"} without a reason`)),
      component: "host",
    };
  if (error.component !== "host") return { ...fail(error.code, error.message), ...componentOf(error) };
  const server = await host.agent.serverName();
  return {
    ...fail(error.code, `${server ? `server ${server}` : "the server"}: ${error.message}`),
    component: "host",
  };
}

const componentOf = (error: WireError): { component?: Component } =>
  error.component ? { component: error.component } : {};
