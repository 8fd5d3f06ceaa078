import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, ok, type Result, reasonOf } from "../../shared/errors";
import type { OpResult } from "../../shared/protocol";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { alertOnService } from "../services/alerts/hooks";
import { loadInstallJob, recordInstalled, recordInstallFailed } from "../services/services/outcome";
import { openPassword } from "../services/services/passwords";
import { runOnHost, type WorkflowRef } from "./host-step";

export interface PodServiceParams {
  serviceId: string;
}

/**
 * The host copies an initialised data directory, starts the server and waits until it accepts
 * connections (its own bound is 90 s for the init); an image pull is not part of it (built locally).
 */
const INSTALL_TIMEOUT_MS = 180_000;

/**
 * One database service install (docs/services.md), instance id = the service's id:
 * 1. the job read from D1 (skipped when the row is gone or no longer `installing`);
 * 2. the password opened outside any step (step outputs are stored by the engine);
 * 3. `service.install` on the pod's host with the plan's limits through `runOnHost` (one key per
 *    instance: a retry joins the host's run, and the host adopts the sidecar it made);
 * 4. `running` with the reported version and port and a `service_running` event, or `error` with
 *    the reason and an `error` event.
 * Every instance ends its install: an exception on the way is recorded as the failure too.
 */
export class PodServiceWorkflow extends WorkflowEntrypoint<Bindings, PodServiceParams> {
  override async run(event: Readonly<WorkflowEvent<PodServiceParams>>, step: WorkflowStep) {
    const { serviceId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_SERVICE", instanceId: event.instanceId };
    let outcome: Result<unknown>;
    try {
      outcome = await this.install(step, ref, serviceId);
    } catch (error) {
      outcome = fail(
        "internal",
        reasonOf(error, "the service's install's workflow stopped without a reason (control plane)"),
      );
    }
    if (!outcome.ok) {
      const reason = outcome.message;
      await step.do("record the failure", async () => {
        await recordInstallFailed(createDb(this.env.DB), serviceId, reason);
        return true;
      });
    }
    // Alerts (docs/alerts.md): a failed install opens the pod's incident, a running service closes it.
    await step.do("alert", async () => {
      await alertOnService(this.env, createDb(this.env.DB), serviceId);
      return true;
    });
    return outcome.ok ? { status: "done" as const } : { status: "error" as const, reason: outcome.message };
  }

  private async install(step: WorkflowStep, ref: WorkflowRef, serviceId: string): Promise<Result<unknown>> {
    const loaded = await step.do("read the service", async () =>
      loadInstallJob(createDb(this.env.DB), serviceId),
    );
    if (loaded.kind === "skip") return loaded.fail ? fail("conflict", loaded.reason) : ok(null);
    const { job } = loaded;
    // Outside any step: the plaintext is never a step's output, so the engine never stores it.
    const password = await openPassword(
      this.env,
      { podId: job.podId, serviceType: job.type },
      job.passwordEncrypted,
    );
    if (!password.ok) return password;
    const installed = await runOnHost(step, this.env, ref, {
      name: "install on host",
      hostId: job.hostId,
      op: "service.install",
      params: { name: job.podName, type: job.type, password: password.value, limits: job.limits },
      timeoutMs: INSTALL_TIMEOUT_MS,
    });
    if (!installed.ok)
      // a host's message never carries the password by design; masked anyway, it is stored and shown
      return fail(installed.code, installed.message.split(password.value).join("***"));
    const reported: OpResult<"service.install"> = installed.value;
    await step.do("record the service running", async () => {
      await recordInstalled(createDb(this.env.DB), job, reported);
      return true;
    });
    return installed;
  }
}
