import type { WorkflowStep } from "cloudflare:workers";
import { ok, type Result } from "../../../shared/errors";
import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import type { MoveJob, Placement, vhostExtras } from "../../services/hosts/move-job";
import { recordEventStatement } from "../../services/pods/events";
import { runOnHost, type WorkflowRef } from "../host-step";

/** stop, start, delete: a container's life, a few seconds each */
export const POWER_TIMEOUT_MS = 60_000;
/** the home streamed to R2 and back (a pod's disk is at most tens of GB) */
export const COPY_TIMEOUT_MS = 60 * 60_000;
/** a database sidecar made and started */
export const INSTALL_TIMEOUT_MS = 180_000;

export type Job = Extract<MoveJob, { kind: "run" }>;
export type Placed = Extract<Placement, { ok: true }>;
export type Extras = Awaited<ReturnType<typeof vhostExtras>>;

/** One move's instance: what every part of it (pre-copy, databases, undo) works with. */
export interface MoveRun {
  env: Bindings;
  step: WorkflowStep;
  ref: WorkflowRef;
  job: Job;
}

/** What the move did so far, rebuilt as steps replay: what undoing it must undo. */
export interface Progress {
  placed: Placed | null;
  stoppedOld: boolean;
  createdNew: boolean;
  switched: boolean;
  backupId: string | null;
}

/** a span of an evacuation's downtime: what ended at its end */
export interface Phase {
  phase: string;
  ms: number;
}

/** Where the downtime goes, for the `moved` event: each mark a step, so a replay gives the same times. */
export class Marks {
  readonly marks: { phase: string; at: number }[] = [];
  constructor(private readonly step: WorkflowStep) {}

  async mark(phase: string) {
    this.marks.push({ phase, at: await this.step.do(`mark: ${phase}`, async () => Date.now()) });
  }

  /** the spans from `from` to each mark in turn */
  phases(from: number | null): Phase[] {
    const phases: Phase[] = [];
    let since = from;
    for (const m of this.marks) {
      if (since !== null) phases.push({ phase: m.phase, ms: m.at - since });
      since = m.at;
    }
    return phases;
  }
}

export const dbOf = (run: MoveRun) => createDb(run.env.DB);

export function moveEvent(run: MoveRun, type: "progress", message: string) {
  return run.step.do(`event: ${type}: ${message}`, async () => {
    await recordEventStatement(dbOf(run), run.job.podId, type, message);
    return true;
  });
}

/**
 * The vhost's custom domains and feedback widget on the new host (the pod runs there: a vhost is
 * rendered with its address), each only when it differs from what was sent before (`before`).
 */
export async function serveExtras(
  run: MoveRun,
  placed: Placed,
  extras: Extras,
  before: Extras | null,
): Promise<Result<true>> {
  const { step, env, ref, job } = run;
  const again = before ? " again" : "";
  if (extras.domains.length > 0 && JSON.stringify(extras.domains) !== JSON.stringify(before?.domains)) {
    const set = await runOnHost(step, env, ref, {
      name: `serve the custom domains${again}`,
      hostId: placed.hostId,
      op: "pod.domains.set",
      params: { name: job.podName, domains: extras.domains },
      timeoutMs: POWER_TIMEOUT_MS,
    });
    if (!set.ok) return set;
  }
  if (extras.feedback && JSON.stringify(extras.feedback) !== JSON.stringify(before?.feedback)) {
    const set = await runOnHost(step, env, ref, {
      name: `serve the feedback widget${again}`,
      hostId: placed.hostId,
      op: "pod.feedback.set",
      params: { name: job.podName, feedback: extras.feedback },
      timeoutMs: POWER_TIMEOUT_MS,
    });
    if (!set.ok) return set;
  }
  return ok(true);
}
