import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, type Result, reasonOf } from "../../shared/errors";
import type { PodSpec } from "../../shared/protocol";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { claimStagedBlob, discardStagedBlob, newStagingKey } from "../services/blobs/staging";
import { RELOAD_TIMEOUT_MS, recordReloaded } from "../services/inside/reload";
import { markCreateFailed } from "../services/pods/create-outcome";
import { type PodEventType, recordEventStatement } from "../services/pods/events";
import { runOnHost, type WorkflowRef } from "./host-step";

/** What a new pod's files start from: the preset's defaults, an uploaded archive, or another pod. */
export type PodSeed =
  | {
      kind: "zip";
      /** the archive, staged under a key no host owns yet (incomingStagingKey) */
      incomingKey: string;
      filename: string;
      files: number;
      bytes: number;
      /** an import (POST /api/imports): recorded as an `imported` event rather than `zip_uploaded` */
      imported?: { source: string; source_url: string; type: string; title: string };
    }
  | { kind: "clone"; source: string; sourceHostId: string };

export interface PodCreateParams {
  podId: string;
  hostId: string;
  /** for the progress events' wording */
  hostName: string;
  spec: PodSpec;
  seed?: PodSeed;
}

/** the host pulls, checks and starts the image's container and waits for its web server */
const CREATE_TIMEOUT_MS = 120_000;
/** a clone copies the source's home first */
const CLONE_TIMEOUT_MS = 180_000;
/** from-zip: the host also fetches, checks and unpacks up to 1 GiB */
const UNPACK_TIMEOUT_MS = 660_000;

/**
 * A pod from admission to `running` (or `error`): POST /api/pods, from-zip and clone. Each step is
 * idempotent and every host command carries its step's key (./host-step.ts), so a Worker restart or a
 * reconnecting agent replays safely. The pod's status is written by the HostAgent object when the
 * host answers `pod.create`/`pod.clone`; this records the events around it and always ends the pod:
 * `running`, or `error` with the reason.
 */
export class PodCreateWorkflow extends WorkflowEntrypoint<Bindings, PodCreateParams> {
  override async run(event: Readonly<WorkflowEvent<PodCreateParams>>, step: WorkflowStep) {
    const p = event.payload;
    const ref: WorkflowRef = { workflow: "POD_CREATE", instanceId: event.instanceId };
    let outcome: Result<unknown>;
    try {
      outcome = await this.create(p, ref, step);
    } catch (error) {
      outcome = fail(
        "internal",
        reasonOf(error, "the creation's workflow stopped without a reason (control plane)"),
      );
    }
    if (outcome.ok) return { status: "running" as const };
    const reason = outcome.message;
    await step.do("record the failure", async () => {
      await markCreateFailed(this.env, createDb(this.env.DB), p.podId, reason);
      if (p.seed?.kind === "zip") await discardStagedBlob(this.env, p.seed.incomingKey);
      return true;
    });
    return { status: "error" as const, reason };
  }

  private async create(p: PodCreateParams, ref: WorkflowRef, step: WorkflowStep): Promise<Result<unknown>> {
    const seed = p.seed;
    if (seed?.kind === "clone" && seed.sourceHostId !== p.hostId) return this.cloneAcross(p, seed, ref, step);
    if (seed?.kind === "clone") {
      const cloned = await runOnHost(step, this.env, ref, {
        name: "clone on host",
        hostId: p.hostId,
        op: "pod.clone",
        params: { source: seed.source, spec: p.spec },
        timeoutMs: CLONE_TIMEOUT_MS,
        announce: () => this.progress(step, p, `copying pod ${seed.source} on server ${p.hostName}`),
      });
      if (!cloned.ok) return cloned;
      await this.record(step, p, "started", "pod is running");
      return cloned;
    }
    if (seed?.kind !== "zip") {
      const created = await runOnHost(step, this.env, ref, {
        name: "create on host",
        hostId: p.hostId,
        op: "pod.create",
        params: p.spec,
        timeoutMs: CREATE_TIMEOUT_MS,
        announce: () => this.progress(step, p, `starting the pod on server ${p.hostName}`),
      });
      if (created.ok) await this.record(step, p, "started", "pod is running");
      return created;
    }

    // from-zip: the archive moves to a key the host may read; the host unpacks it and reloads the
    // pod on it (dependencies installed, services restarted) before the pod counts as running.
    const blobKey = await step.do("name the host's copy of the archive", async () => newStagingKey(p.hostId));
    await step.do("stage the archive for the host", async () => {
      await claimStagedBlob(this.env, seed.incomingKey, blobKey);
      return true;
    });
    const created = await runOnHost(step, this.env, ref, {
      name: "create on host",
      hostId: p.hostId,
      op: "pod.create",
      params: { ...p.spec, seed: { blobKey } },
      timeoutMs: CREATE_TIMEOUT_MS + UNPACK_TIMEOUT_MS + RELOAD_TIMEOUT_MS,
      announce: () =>
        this.progress(
          step,
          p,
          `unpacking ${seed.filename} on server ${p.hostName}, installing dependencies and starting services`,
        ),
    });
    await step.do("discard the archive", async () => {
      await discardStagedBlob(this.env, blobKey);
      return true;
    });
    if (!created.ok) return created;
    await this.record(step, p, "started", "pod is running");
    if (seed.imported)
      await this.record(
        step,
        p,
        "imported",
        `imported ${seed.imported.type} "${seed.imported.title}" into ~/app (${seed.files} files)`,
        { ...seed.imported, files: seed.files, bytes: seed.bytes },
      );
    else
      await this.record(
        step,
        p,
        "zip_uploaded",
        `${seed.filename} unpacked into ~/app (${seed.files} files)`,
        {
          files: seed.files,
          bytes: seed.bytes,
          archive: seed.filename,
        },
      );
    const reload = created.value.reload;
    await step.do("record the reload", async () => {
      const db = createDb(this.env.DB);
      // The pod runs either way: a failed install is the app's problem, told in an event, not the pod's.
      if (reload?.ok) await recordReloaded(db, p.podId, reload);
      else
        await recordEventStatement(
          db,
          p.podId,
          "error",
          `reload after unpacking the archive failed: ${
            reload
              ? `dependency install or build failed (exit status ${reload.exitCode ?? "unknown"}); see the build log`
              : "the host did not report it"
          }`,
        );
      return true;
    });
    return created;
  }

  /**
   * A clone onto another host (the source's has no room, or takes no pods): the source host streams
   * the pod's home as a tar into R2, the copy is handed to the new host, which fills the new pod's
   * volume from it before the first start. The bytes never rest in a Worker.
   */
  private async cloneAcross(
    p: PodCreateParams,
    seed: Extract<PodSeed, { kind: "clone" }>,
    ref: WorkflowRef,
    step: WorkflowStep,
  ): Promise<Result<unknown>> {
    const keys = await step.do("name the copies of the home", async () => ({
      exported: newStagingKey(seed.sourceHostId),
      imported: newStagingKey(p.hostId),
    }));
    const exported = await runOnHost(step, this.env, ref, {
      name: "export the source's home",
      hostId: seed.sourceHostId,
      op: "pod.clone.export",
      params: { name: seed.source, blobKey: keys.exported },
      timeoutMs: CLONE_TIMEOUT_MS,
      announce: () => this.progress(step, p, `copying pod ${seed.source} to server ${p.hostName}`),
    });
    let created: Result<unknown> = exported;
    if (exported.ok) {
      await step.do("hand the home to the new host", async () => {
        await claimStagedBlob(this.env, keys.exported, keys.imported);
        return true;
      });
      created = await runOnHost(step, this.env, ref, {
        name: "create on host",
        hostId: p.hostId,
        op: "pod.create",
        params: { ...p.spec, home: { blobKey: keys.imported } },
        timeoutMs: CLONE_TIMEOUT_MS,
      });
    }
    await step.do("discard the copies of the home", async () => {
      await discardStagedBlob(this.env, keys.exported);
      await discardStagedBlob(this.env, keys.imported);
      return true;
    });
    if (created.ok) await this.record(step, p, "started", "pod is running");
    return created;
  }

  private progress(step: WorkflowStep, p: PodCreateParams, message: string) {
    return this.record(step, p, "progress", message);
  }

  private record(
    step: WorkflowStep,
    p: PodCreateParams,
    type: PodEventType,
    message: string,
    metadata?: Record<string, unknown>,
  ) {
    return step.do(`event: ${type}: ${message}`, async () => {
      await recordEventStatement(createDb(this.env.DB), p.podId, type, message, metadata);
      return true;
    });
  }
}
