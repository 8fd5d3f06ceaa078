import { z } from "zod";
import { ErrorCode } from "../errors";
import { OpName, PodState } from "./ops";

/**
 * The wire between a HostAgent Durable Object and its agent, one JSON message per WebSocket frame.
 * The sender is in the type: `control:*` goes to the agent, `agent:*` comes from it.
 */
export const PROTOCOL_VERSION = 1;

export const WireError = z.object({ code: ErrorCode, message: z.string() });
export type WireError = z.infer<typeof WireError>;

// control plane → agent

export const ControlCall = z.object({
  type: z.literal("control:call"),
  id: z.string(),
  /** the same key on a re-sent command: the agent runs it once and answers every copy alike */
  idempotencyKey: z.string(),
  op: OpName,
  params: z.unknown(),
  /** the agent gives up (and answers `unavailable`) after this long */
  timeoutMs: z.number().int().positive(),
});

export const ControlWelcome = z.object({
  type: z.literal("control:welcome"),
  hostId: z.string(),
  /** pods the control plane knows on this host; the agent's containers outside it are orphans */
  orphans: z.array(z.string()),
});

export const ControlPong = z.object({ type: z.literal("control:pong"), at: z.number() });

export const ControlMessage = z.discriminatedUnion("type", [ControlCall, ControlWelcome, ControlPong]);
export type ControlMessage = z.infer<typeof ControlMessage>;

// agent → control plane

export const AgentHello = z.object({
  type: z.literal("agent:hello"),
  protocol: z.number().int(),
  agentVersion: z.string(),
  inventory: z.array(PodState),
});

export const AgentResult = z.discriminatedUnion("ok", [
  z.object({ type: z.literal("agent:result"), id: z.string(), ok: z.literal(true), data: z.unknown() }),
  z.object({ type: z.literal("agent:result"), id: z.string(), ok: z.literal(false), error: WireError }),
]);

/** Something the agent saw on its own: a container died, came back, or a pod's status changed. */
export const AgentPodStatus = z.object({
  type: z.literal("agent:pod-status"),
  pod: PodState,
  reason: z.string().optional(),
});

export const AgentPing = z.object({ type: z.literal("agent:ping"), at: z.number() });

export const AgentMessage = z.union([AgentHello, AgentResult, AgentPodStatus, AgentPing]);
export type AgentMessage = z.infer<typeof AgentMessage>;
export type AgentResultMessage = z.infer<typeof AgentResult>;

/** The header an agent authenticates with when it dials `GET /agent/connect`. */
export const AGENT_TOKEN_PREFIX = "hat_";
