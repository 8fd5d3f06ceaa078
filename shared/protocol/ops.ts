import { z } from "zod";
import { backupOps } from "./backups";
import { codingAgentsOps } from "./coding-agents";
import { domainsOps } from "./domains";
import { feedbackOps } from "./feedback";
import { filesOps } from "./files";
import { gitOps } from "./git";
import { healthOps } from "./health";
import { insideOps, ReloadResult } from "./inside";
import { type Built, lazy, opTable } from "./lazy";
import { movesOps } from "./moves";
import { PodName } from "./pod-name";
import { reconcileOps } from "./reconcile";
import { servicesOps } from "./services";
import { sshOps } from "./ssh";
import { terminalOps } from "./terminal";
import { ZipSeed, zipOps } from "./zip";

/**
 * Every command the control plane can send to a host agent: a name, a params schema and a result
 * schema. Both halves import this one table; the agent parses params, the Worker parses results.
 */

export { PodName };

/** Container limits derived from the plan. */
export const PodLimits = lazy(() =>
  z.object({
    cpu: z.number().positive(),
    memoryMb: z.number().int().positive(),
    diskGb: z.number().int().positive(),
    pids: z.number().int().positive(),
    /** the plan's log history (docs/logs.md); absent (an older control plane): the smallest plan's */
    logDays: z.number().int().min(1).max(366).optional(),
    logMb: z.number().int().min(1).max(65536).optional(),
  }),
);
export type PodLimits = Built<typeof PodLimits>;

export const CronJob = lazy(() => z.object({ schedule: z.string(), command: z.string() }));
export const WorkerProcess = lazy(() => z.object({ name: z.string(), command: z.string() }));

/** `releases.json` holds at most KEEP_RELEASES small entries; far below this */
const MAX_RELEASES_RECORD = 256 * 1024;

export const PodSpec = lazy(() =>
  z.object({
    podId: z.string(),
    name: PodName,
    preset: z.enum(["static", "php", "nodejs", "python"]),
    /** the web port inside the pod that the ingress forwards to */
    port: z.number().int(),
    /** the host name the ingress answers for, `{name}.{POD_DOMAIN}` */
    domain: z.string(),
    /** the host port of the pod's SSH gateway listener */
    sshPort: z.number().int().min(1).max(65535),
    limits: PodLimits(),
    env: z.record(z.string(), z.string()).default({}),
    cronJobs: z.array(CronJob()).default([]),
    workers: z.array(WorkerProcess()).default([]),
    authorizedKeys: z.array(z.string()).default([]),
  }),
);
export type PodSpec = Built<typeof PodSpec>;

/** A staged tar of another pod's home (a clone across hosts); fills the volume before the first start. */
export const HomeSeed = lazy(() =>
  z.object({
    blobKey: z.string().min(1).max(200),
    /** a moved pod's git releases record from its old host (`pod.clone.export`'s `releases`), as text */
    releases: z.string().max(MAX_RELEASES_RECORD).optional(),
  }),
);
export type HomeSeed = Built<typeof HomeSeed>;

export const ContainerState = z.enum(["running", "stopped", "missing"]);
export type ContainerState = z.infer<typeof ContainerState>;

export const PodState = z.object({ name: PodName, state: ContainerState, ip: z.string().nullable() });
export type PodState = z.infer<typeof PodState>;

const NameOnly = lazy(() => z.object({ name: PodName }));

export const ops = opTable({
  /** round trip with no work: liveness and the protocol benchmark */
  "host.ping": () => ({ params: z.object({}), result: z.object({ pong: z.literal(true) }) }),
  "host.inventory": () => ({
    params: z.object({}),
    result: z.object({ pods: z.array(PodState) }),
  }),
  /**
   * create (or adopt the existing, same-named) container, volume and network, start it, render the
   * vhost; with `seed`, the staged archive becomes ~/app and is reloaded (dependencies installed,
   * services restarted) before the vhost exists, so a pod reported running serves the archive
   */
  "pod.create": () => ({
    params: PodSpec().extend({ seed: ZipSeed().optional(), home: HomeSeed().optional() }),
    result: PodState.extend({ reload: ReloadResult().optional() }),
  }),
  "pod.start": () => ({ params: NameOnly(), result: PodState }),
  "pod.stop": () => ({ params: NameOnly(), result: PodState }),
  "pod.restart": () => ({ params: NameOnly(), result: PodState }),
  "pod.inspect": () => ({ params: NameOnly(), result: PodState }),
  /** containers, volumes, network and vhost removed; an absent pod is already deleted */
  "pod.delete": () => ({ params: NameOnly(), result: z.object({ deleted: z.literal(true) }) }),
  "pod.resize": () => ({ params: z.object({ name: PodName, limits: PodLimits() }), result: PodState }),
  /** a new pod from `spec` whose home volume starts as a copy of `source`'s (both on this host) */
  "pod.clone": () => ({ params: z.object({ source: PodName, spec: PodSpec() }), result: PodState }),
  /**
   * the source side of a clone onto another host: the pod's home as a tar, streamed to the staged
   * blob `blobKey` (the destination's `pod.create` takes it as `home`); running or stopped pod
   */
  "pod.clone.export": () => ({
    params: z.object({ name: PodName, blobKey: z.string().min(1).max(200) }),
    result: z.object({
      bytes: z.number().int().min(0),
      /** the host's record of the pod's git releases (agent/git/record.ts), for a pod moving hosts */
      releases: z.string().max(MAX_RELEASES_RECORD).nullable().optional(),
      /** when the copy began reading, ms since the epoch on this host's clock (an evacuation's delta is what changed since) */
      startedAt: z.number().int().min(0).optional(),
    }),
  }),
  ...movesOps,
  ...sshOps,
  ...insideOps,
  ...zipOps,
  ...filesOps,
  ...healthOps,
  ...gitOps,
  ...servicesOps,
  ...backupOps,
  ...domainsOps,
  ...feedbackOps,
  ...codingAgentsOps,
  ...terminalOps,
  ...reconcileOps,
});

export type Op = keyof typeof ops;
export type OpParams<O extends Op> = z.input<(typeof ops)[O]["params"]>;
export type OpResult<O extends Op> = z.infer<(typeof ops)[O]["result"]>;
export const OpName = z.enum(Object.keys(ops) as [Op, ...Op[]]);

/** Ops that only look at the host: running one twice is harmless, so they need no journal. */
const READ_ONLY_OPS: ReadonlySet<Op> = new Set<Op>([
  "host.ping",
  "host.inventory",
  "pod.inspect",
  "pod.ssh.keys.list",
  "pod.env.get",
  "pod.logs",
  "pod.preset",
  "pod.disk",
  "pod.files.list",
  // writes only a staged blob the caller named: safe to run again
  "pod.files.download",
  // streams into a relay the caller named, which takes one producer: a second run is refused there
  "pod.logs.follow",
  // fetch into a temporary directory that is removed again
  "repo.branches",
  "repo.inspect",
]);

/**
 * Ops that change a pod but whose outcome is never replayed: every caller makes a fresh idempotency
 * key per request and none ever sends a key again (no API route or MCP tool takes a client's key for
 * them), so a journal row could only be written, never read. `pod.exec` runs the tenant's command:
 * not idempotent, but what the journal guards against — a retried key running it twice — cannot
 * happen, and the agent's dispatcher still runs a key once if it ever did. An op may join only while
 * no caller passes it a key of its own (docs/decisions/host-agent-journal.md).
 */
// `host.reconcile`: every pass (hello, timer, operator) makes a fresh key, and a pass run twice finds
// what the first left (its removals are of what no pod owns, each idempotent)
const UNREPLAYED_OPS: ReadonlySet<Op> = new Set<Op>(["pod.exec", "host.reconcile"]);

/** Ops the HostAgent sends without a journal row: reads, and changes whose outcome is never replayed. */
export const isUnjournaledOp = (op: Op): boolean => READ_ONLY_OPS.has(op) || UNREPLAYED_OPS.has(op);

/** The pod a command is about (`name`, or a spec's for create and clone), if any. */
export function podOfParams(params: unknown): string | undefined {
  const p = params as { name?: unknown; spec?: { name?: unknown } } | undefined;
  if (typeof p?.name === "string") return p.name;
  if (typeof p?.spec?.name === "string") return p.spec.name;
  return undefined;
}
