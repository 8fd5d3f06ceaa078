import { z } from "zod";
import { Component, ErrorCode } from "../errors";
import { Diagnosis } from "./health";
import { type Built, lazy } from "./lazy";
import { OpName, PodName, PodState } from "./ops";
import { ServiceType } from "./services";

/**
 * The wire between a HostAgent Durable Object and its agent, one JSON message per WebSocket frame.
 * The sender is in the type: `control:*` goes to the agent, `agent:*` comes from it.
 */
/**
 * Raised when an op is removed or changes incompatibly, so an agent of another version is refused
 * at its hello rather than failing op by op. 2: file writes became receive/commit/discard. 3: the
 * agent reports whether it can serve (hello's `problem`, `agent:host-health`), and `pod.keys.*`
 * became `pod.ssh.keys.*`, the words the API uses for a pod's keys.
 */
export const PROTOCOL_VERSION = 4;

/**
 * `component`: where the failure came from, when the agent knows (optional: older agents leave it
 * out). One this side does not know yet (a newer agent's) is dropped, not the whole answer.
 */
export const WireError = z.object({
  code: ErrorCode,
  message: z.string(),
  component: Component.optional().catch(undefined),
});
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

/** Why the host cannot serve pods (its ingress is down …), or null when it can. */
export const HostProblem = lazy(() => z.string().max(500).nullable());

export const AgentHello = lazy(() =>
  z.object({
    type: z.literal("agent:hello"),
    protocol: z.number().int(),
    agentVersion: z.string(),
    inventory: z.array(PodState),
    /** a host with a problem is kept out of placement until it reports null */
    problem: HostProblem().default(null),
  }),
);

/** The host's ability to serve changed (the ingress failed, or came back). */
export const AgentHostHealth = lazy(() =>
  z.object({ type: z.literal("agent:host-health"), problem: HostProblem() }),
);

export const AgentResult = lazy(() =>
  z.discriminatedUnion("ok", [
    z.object({ type: z.literal("agent:result"), id: z.string(), ok: z.literal(true), data: z.unknown() }),
    z.object({ type: z.literal("agent:result"), id: z.string(), ok: z.literal(false), error: WireError }),
  ]),
);

/** Something the agent saw on its own: a container died, came back, or a pod's status changed. */
export const AgentPodStatus = lazy(() =>
  z.object({
    type: z.literal("agent:pod-status"),
    pod: PodState,
    reason: z.string().optional(),
  }),
);

export const AgentPing = lazy(() => z.object({ type: z.literal("agent:ping"), at: z.number() }));

/** One pod's resource use over the last sampling interval (see agent/metrics/sampler.ts). */
export const MetricSample = lazy(() =>
  z.object({
    name: PodName,
    /** when it was taken, ms since the epoch (the host's clock; the control plane clamps it) */
    at: z.number().int(),
    /** percent of the pod's own CPU allocation (its plan), averaged over the interval */
    cpu: z.number().min(0),
    /** percent of the pod's memory limit (its plan), page cache that can be dropped not counted */
    memory: z.number().min(0),
    /** bytes on disk of the pod's home volume (measured less often, the last figure in between) */
    storage: z.number().int().min(0),
    /** bytes received / sent during the interval */
    netIn: z.number().int().min(0),
    netOut: z.number().int().min(0),
  }),
);
export type MetricSample = Built<typeof MetricSample>;

/** Every running pod's sample of one tick. */
export const AgentMetrics = lazy(() =>
  z.object({
    type: z.literal("agent:metrics"),
    samples: z.array(MetricSample()).max(2000),
  }),
);

/**
 * Changes of the pods' app health: a diagnosis when something is wrong, null when the app is fine
 * (again), null also for a stopped pod. The first report after a (re)connect covers every pod of the
 * host, later ones only changes.
 */
export const AgentHealth = lazy(() =>
  z.object({
    type: z.literal("agent:health"),
    pods: z.array(z.object({ name: PodName, diagnosis: Diagnosis().nullable() })).max(2000),
  }),
);

/**
 * A running pod's database sidecars as the host sees them (docs/services.md "After the install"):
 * every sidecar of the pod with its container's state; a service the Worker installed that is not
 * in the list has no container on the host. Sent by the periodic watch for the pods whose list
 * changed (a state counts once two looks in a row agree), every running pod after a (re)connect;
 * a stopped pod, or one a command is working on, is left out.
 */
export const SidecarState = lazy(() => z.enum(["running", "restarting", "exited"]));
export type SidecarState = Built<typeof SidecarState>;
export const PodSidecars = lazy(() =>
  z.object({
    name: PodName,
    services: z.array(z.object({ type: ServiceType, state: SidecarState() })).max(ServiceType.options.length),
  }),
);
export type PodSidecars = Built<typeof PodSidecars>;
export const AgentServices = lazy(() =>
  z.object({
    type: z.literal("agent:services"),
    pods: z.array(PodSidecars()).max(2000),
  }),
);
export type AgentServicesMessage = Built<typeof AgentServices>;

/** The cap on one deployment's build log; past it the agent sends one last line saying so. */
export const DEPLOY_LOG_MAX_BYTES = 1024 * 1024;

/**
 * Build output of a running deploy (./git.ts), in order: `seq` counts from 0 per deployment, so a
 * chunk sent twice (after a reconnect) is stored once. The agent sends at most every ~500 ms and at
 * most 64 KiB at a time; the token never appears (the agent redacts it).
 */
export const AgentDeployLog = lazy(() =>
  z.object({
    type: z.literal("agent:deploy-log"),
    deploymentId: z.string().min(1).max(64),
    seq: z.number().int().min(0),
    chunk: z.string().max(64 * 1024),
  }),
);

export const AgentMessage = lazy(() =>
  z.union([
    AgentHello(),
    AgentResult(),
    AgentPodStatus(),
    AgentPing(),
    AgentMetrics(),
    AgentHealth(),
    AgentServices(),
    AgentHostHealth(),
    AgentDeployLog(),
  ]),
);
export type AgentMessage = Built<typeof AgentMessage>;
export type AgentResultMessage = Built<typeof AgentResult>;
export type AgentMetricsMessage = Built<typeof AgentMetrics>;
export type AgentHealthMessage = Built<typeof AgentHealth>;

/** The header an agent authenticates with when it dials `GET /agent/connect`. */
export const AGENT_TOKEN_PREFIX = "hat_";
