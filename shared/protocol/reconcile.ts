import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";
import { ServiceType } from "./services";

/**
 * Drift between a host and the control plane's records (docs/reliability.md "Drift"): the Worker
 * sends the pods it knows on the host (id, name, installed services); the agent lists what it holds
 * under its own name prefix (containers, networks, volumes, pod subvolumes, vhosts, git records) and
 * matches each object to a pod by its labels and its exact name, never by a part of a name. What no
 * pod owns is removed once older than `graceMs` (an operation in flight is younger), or only
 * reported where it holds data; pods whose container is gone are named back for the Worker to mark.
 * Spread into `ops` in ./ops.ts like ./services.ts.
 */

export const DRIFT_KINDS = [
  "container",
  "sidecar",
  "helper",
  "network",
  "volume",
  "subvolume",
  "vhost",
  "release",
] as const;
export const DriftKind = lazy(() => z.enum(DRIFT_KINDS));
export type DriftKind = Built<typeof DriftKind>;

/**
 * - `removed`: it was an orphan older than the grace period, and it is gone;
 * - `would_remove`: the same in a dry run;
 * - `young`: an orphan younger than the grace period, left for the next run;
 * - `reported`: an orphan that holds data (a volume, a subvolume), left for an operator;
 * - `failed`: its removal failed (`detail` says why).
 */
export const DriftAction = lazy(() => z.enum(["removed", "would_remove", "young", "reported", "failed"]));
export type DriftAction = Built<typeof DriftAction>;

export const DriftFinding = lazy(() =>
  z.object({
    kind: DriftKind(),
    /** the object's name on the host (container, network, volume, subvolume directory, vhost or record) */
    name: z.string().max(300),
    /** the pod its labels or name point at, when they point at one */
    pod: z.string().max(100).nullable(),
    action: DriftAction(),
    detail: z.string().max(1000),
  }),
);
export type DriftFinding = Built<typeof DriftFinding>;

export const ReconcilePod = lazy(() =>
  z.object({
    id: z.string().min(1).max(64),
    name: PodName,
    services: z.array(ServiceType).max(ServiceType.options.length).default([]),
  }),
);
export type ReconcilePod = Built<typeof ReconcilePod>;

export const reconcileOps = {
  "host.reconcile": () => ({
    params: z.object({
      /** every pod the control plane has on this host (all but deleted ones) */
      pods: z.array(ReconcilePod()).max(10_000),
      /** orphans younger than this are left alone */
      graceMs: z.number().int().min(0),
      /** find and report, change nothing */
      dryRun: z.boolean(),
    }),
    result: z.object({
      findings: z.array(DriftFinding()).max(20_000),
      /** pods of the list whose container is not on the host */
      missing: z.array(PodName).max(10_000),
    }),
  }),
};
