import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { type Result, reasonOf } from "../../shared/errors";
import type { DeployOutcome } from "../../shared/protocol/git";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { alertOnDeployment } from "../services/alerts/hooks";
import { budgetForDeploy, recordBuildTime } from "../services/git/build-budget";
import { type DeployJob, loadDeployJob, recordDeployOutcome, tokenOf } from "../services/git/job";
import { claimTurn, finishDeployment, nextQueued, TURN_EVENT, type Turn, wake } from "../services/git/queue";
import { reportCommitStatus } from "../services/git/statuses";
import { runOnHost, type WorkflowRef } from "./host-step";

export interface PodDeployParams {
  deploymentId: string;
  podId: string;
}

/** fetch, install, build, start beside the serving release and switch (the host's own limits are lower) */
export const DEPLOY_TIMEOUT_MS = 20 * 60_000;
/** a rollback switches to a release already built */
const ROLLBACK_TIMEOUT_MS = 3 * 60_000;
/** how often a waiting deployment looks again without being woken, and how many times */
const TURN_RECHECK = "5 minutes";
const MAX_TURN_CHECKS = 60;

type Job = Extract<DeployJob, { kind: "deploy" | "rollback" }>;

/**
 * One git deployment (deploy, push or rollback; docs/git.md), instance id = the deployment's id:
 * 1. its turn: one deploy runs per pod at a time; a queued one waits for the `deploy-turn` event
 *    the previous one sends when it ends (and a from-repo pod's first deploy waits for the pod to run);
 * 2. the job read from D1, the token decrypted outside any step (step outputs are stored), and
 *    a deploy's build budget checked: spent, it ends `failed` (class `build_budget`) undispatched;
 * 3. `pod.deploy` / `pod.rollback` on the pod's host through `runOnHost` (the step's key makes a
 *    retry join the host's run, never build twice), with commit statuses around it;
 * 4. the outcome recorded (status, event, releases kept) and the next queued deployment woken.
 * Every instance ends its deployment: success, or failed with a class.
 */
export class PodDeployWorkflow extends WorkflowEntrypoint<Bindings, PodDeployParams> {
  override async run(event: Readonly<WorkflowEvent<PodDeployParams>>, step: WorkflowStep) {
    const { deploymentId, podId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_DEPLOY", instanceId: event.instanceId };
    let result: { status: string; reason?: string };
    try {
      const turn = await this.waitForTurn(step, deploymentId);
      if (turn !== "run") {
        if (turn !== "over")
          await step.do("give up waiting", async () => {
            await finishDeployment(createDb(this.env.DB), deploymentId, {
              ok: false,
              class: "timeout",
              message: "waited too long for the pod's other deployments",
            });
            return true;
          });
        result = { status: "skipped" };
      } else {
        result = await this.deploy(step, ref, deploymentId);
      }
    } catch (error) {
      const message = reasonOf(error, "the deployment's workflow stopped without a reason (control plane)");
      await step.do("record the failure", async () => {
        await finishDeployment(createDb(this.env.DB), deploymentId, { ok: false, class: "unknown", message });
        return true;
      });
      result = { status: "failed", reason: message };
    }
    // Alerts (docs/alerts.md): a failed deployment opens the pod's incident, a success closes it.
    await step.do("alert", async () => {
      await alertOnDeployment(this.env, createDb(this.env.DB), deploymentId);
      return true;
    });
    await step.do("wake the next deployment", async () => {
      const next = await nextQueued(createDb(this.env.DB), podId);
      if (next) await wake(this.env, [next]);
      return next ?? null;
    });
    return result;
  }

  private async waitForTurn(step: WorkflowStep, deploymentId: string): Promise<Turn> {
    let creatingPause = 1_000;
    for (let i = 1; i <= MAX_TURN_CHECKS; i++) {
      const turn = await step.do(`take the turn #${i}`, async () =>
        claimTurn(createDb(this.env.DB), deploymentId),
      );
      if (turn === "run" || turn === "over") return turn;
      if (turn === "pod-creating" || turn === "pod-moving") {
        await step.sleep(`wait for the pod #${i}`, creatingPause);
        creatingPause = Math.min(creatingPause * 2, 15_000);
        continue;
      }
      try {
        await step.waitForEvent(`wait for the turn #${i}`, { type: TURN_EVENT, timeout: TURN_RECHECK });
      } catch {
        // no wake-up: look again
      }
    }
    return "wait";
  }

  private async deploy(step: WorkflowStep, ref: WorkflowRef, deploymentId: string) {
    const job = await step.do("read the deployment", async () =>
      loadDeployJob(createDb(this.env.DB), deploymentId),
    );
    if (job.kind === "skip") return { status: "failed", reason: job.reason };
    // Outside any step: the plaintext is never a step's output, so the engine never stores it.
    const token = await tokenOf(this.env, job);
    const status = (
      name: string,
      sha: string | null | undefined,
      state: "pending" | "success" | "failure",
      description: string,
    ) =>
      step.do(name, async () =>
        reportCommitStatus(this.env, {
          repoUrl: job.repoUrl,
          token,
          sha,
          state,
          description,
          podName: job.podName,
          deploymentId,
        }),
      );

    // The pod's daily build budget (services/git/build-budget.ts): spent, the deploy is not dispatched;
    // otherwise what is left is its time limit on the host. A rollback builds nothing.
    let timeoutMs: number | undefined;
    if (job.kind === "deploy") {
      const budget = await step.do("check the build budget", async () =>
        budgetForDeploy(createDb(this.env.DB), job.podId),
      );
      if (!budget.ok) {
        await step.do("record the spent budget", async () => {
          await finishDeployment(createDb(this.env.DB), deploymentId, {
            ok: false,
            class: "build_budget",
            message: budget.message,
          });
          return true;
        });
        if (job.commitSha)
          await status("report failure", job.commitSha, "failure", "deploy failed: build_budget");
        return { status: "failed", reason: budget.message };
      }
      timeoutMs = budget.leftMs;
    }
    if (job.commitSha)
      await status("report pending", job.commitSha, "pending", `deploying to ${job.podName}`);
    const outcome = await this.onHost(step, ref, deploymentId, job, token, timeoutMs);
    const recorded: DeployOutcome = outcome.ok
      ? outcome.value
      : {
          ok: false,
          class: /never answered/.test(outcome.message) ? "timeout" : "unknown",
          message:
            job.kind === "rollback" && outcome.code === "not_found"
              ? `release ${job.release} is no longer kept on the host; deploy again instead`
              : outcome.message,
          commit: null,
        };
    await step.do("record the outcome", async () => {
      const db = createDb(this.env.DB);
      await recordBuildTime(db, deploymentId, recorded.build_ms);
      await recordDeployOutcome(db, deploymentId, job, recorded);
      return true;
    });
    const sha = recorded.commit?.sha ?? job.commitSha;
    if (recorded.ok) await status("report success", sha, "success", `deployed to ${job.podName}`);
    else await status("report failure", sha, "failure", `deploy failed: ${recorded.class}`);
    return recorded.ok ? { status: "success" } : { status: "failed", reason: recorded.message };
  }

  private onHost(
    step: WorkflowStep,
    ref: WorkflowRef,
    deploymentId: string,
    job: Job,
    token: string | undefined,
    timeoutMs: number | undefined,
  ): Promise<Result<DeployOutcome>> {
    if (job.kind === "rollback")
      return runOnHost(step, this.env, ref, {
        name: "rollback on host",
        hostId: job.hostId,
        op: "pod.rollback",
        params: { name: job.podName, deploymentId, release: job.release ?? "" },
        timeoutMs: ROLLBACK_TIMEOUT_MS,
      });
    return runOnHost(step, this.env, ref, {
      name: "deploy on host",
      hostId: job.hostId,
      op: "pod.deploy",
      params: {
        name: job.podName,
        deploymentId,
        source: { url: job.repoUrl ?? "", branch: job.branch ?? "main", ...(token ? { token } : {}) },
        preset: job.preset,
        buildCommand: job.buildCommand,
        ...(timeoutMs === undefined ? {} : { timeoutMs: Math.max(1_000, timeoutMs) }),
      },
      timeoutMs: DEPLOY_TIMEOUT_MS,
    });
  }
}
