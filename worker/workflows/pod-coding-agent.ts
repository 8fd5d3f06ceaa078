import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, ok, type Result, reasonOf } from "../../shared/errors";
import type { OpResult } from "../../shared/protocol";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { loadInstallJob, recordInstalled, recordInstallFailed } from "../services/coding-agents/outcome";
import { runOnHost, type WorkflowRef } from "./host-step";

export interface PodCodingAgentParams {
  rowId: string;
}

/**
 * The host fetches the package tree from the registry (its own bound is PODHOST_CODING_AGENTS_TIMEOUT_S,
 * 10 minutes by default), copies it into the pod and runs its install scripts (10 minutes each at most).
 */
const INSTALL_TIMEOUT_MS = 30 * 60_000;

/**
 * One coding agent install (docs/coding-agents.md), instance id = the row's id:
 * 1. the job read from D1 (skipped when the row is gone or no longer `installing`);
 * 2. `pod.coding-agents.install` on the pod's host through `runOnHost` (one key per instance: a
 *    retry joins the host's run; the host's handler is safe to run twice);
 * 3. `installed` with the reported version and Node and an `agent_installed` event, or `error`
 *    with the reason and an `agent_install_failed` event.
 * Every instance ends its install: an exception on the way is recorded as the failure too.
 */
export class PodCodingAgentWorkflow extends WorkflowEntrypoint<Bindings, PodCodingAgentParams> {
  override async run(event: Readonly<WorkflowEvent<PodCodingAgentParams>>, step: WorkflowStep) {
    const { rowId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_CODING_AGENT", instanceId: event.instanceId };
    let outcome: Result<unknown>;
    try {
      outcome = await this.install(step, ref, rowId);
    } catch (error) {
      outcome = fail(
        "internal",
        reasonOf(error, "the coding agent's install's workflow stopped without a reason (control plane)"),
      );
    }
    if (outcome.ok) return { status: "done" as const };
    const reason = outcome.message;
    await step.do("record the failure", async () => {
      await recordInstallFailed(createDb(this.env.DB), rowId, reason);
      return true;
    });
    return { status: "error" as const, reason };
  }

  private async install(step: WorkflowStep, ref: WorkflowRef, rowId: string): Promise<Result<unknown>> {
    const loaded = await step.do("read the install", async () =>
      loadInstallJob(createDb(this.env.DB), rowId),
    );
    if (loaded.kind === "skip") return loaded.fail ? fail("conflict", loaded.reason) : ok(null);
    const { job } = loaded;
    const installed = await runOnHost(step, this.env, ref, {
      name: "install on host",
      hostId: job.hostId,
      op: "pod.coding-agents.install",
      params: { name: job.podName, agent: job.slug, version: job.version },
      timeoutMs: INSTALL_TIMEOUT_MS,
    });
    if (!installed.ok) return installed;
    const reported: OpResult<"pod.coding-agents.install"> = installed.value;
    await step.do("record the agent installed", async () => {
      await recordInstalled(createDb(this.env.DB), job, reported);
      return true;
    });
    return installed;
  }
}
