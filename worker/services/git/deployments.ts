import { and, desc, eq, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { type DeploymentRow, deployments, type PodRow } from "../../db/schema";
import type { ServiceContext, TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { NOT_RUNNING } from "../pods/target";
import { requireBuildBudget } from "./build-budget";
import { configOf } from "./config";
import { servingDeployment, tokenOf } from "./job";
import { assembleLog, logChunks, redactSecret } from "./log";
import { enqueueDeployment } from "./queue";
import { type DeploymentView, toDeploymentView } from "./views";

/** The 202 of a deploy (spec): `{id, status: deploying, created_at}`, plus the rest of the deployment. */
export type StartedView = DeploymentView;

/**
 * `POST /api/pods/{name}/git/deploy`: a deployment of the configured branch, queued behind a running
 * one; 429 when the pod's daily build budget is spent.
 */
export async function deployPod({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<StartedView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const config = await configOf(ctx, pod.id);
  if (!config)
    return fail(
      "conflict",
      `no repository is connected to pod ${pod.name}; connect one first (POST /api/pods/${pod.name}/git)`,
    );
  // the plan's daily build minutes spent: 429 naming the budget (./build-budget.ts)
  const budget = await requireBuildBudget(ctx.db, pod);
  if (!budget.ok) return budget;
  return ok(toDeploymentView(await enqueueDeployment(ctx.env, ctx.db, pod.id, { trigger: "manual" })));
}

/** `GET /api/pods/{name}/git/deployments`: newest first, without logs. */
export async function listDeployments({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; limit: number }>): Promise<Result<{ deployments: DeploymentView[] }>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const rows = await ctx.db
    .select()
    .from(deployments)
    .where(eq(deployments.podId, found.value.pod.id))
    .orderBy(desc(deployments.createdAt), desc(deployments.id))
    .limit(input.limit);
  return ok({ deployments: rows.map(toDeploymentView) });
}

async function findDeployment(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  id: string,
): Promise<Result<{ pod: PodRow; deployment: DeploymentRow }>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const [deployment] = await ctx.db
    .select()
    .from(deployments)
    .where(and(eq(deployments.id, id), eq(deployments.podId, pod.id)));
  return deployment ? ok({ pod, deployment }) : fail("not_found", `deployment ${id} not found`);
}

/** The token of the pod's configuration, to mask in logs (the agent masks it already). */
async function tokenToMask(ctx: ServiceContext, podId: string) {
  const config = await configOf(ctx, podId);
  return config ? tokenOf(ctx.env, config) : undefined;
}

/** `GET /api/pods/{name}/git/deployments/{id}`: the deployment with its build log. */
export async function getDeployment({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<DeploymentView & { build_log: string }>> {
  const found = await findDeployment(ctx, teamId, input.name, input.id);
  if (!found.ok) return found;
  const { pod, deployment } = found.value;
  const build_log = await assembleLog(ctx.db, deployment.id, await tokenToMask(ctx, pod.id));
  return ok({ ...toDeploymentView(deployment), build_log });
}

const POLL_MS = 500;
/** a stream is ended after this long even if the deployment is still running (the client reconnects) */
const STREAM_MAX_MS = 15 * 60_000;

/**
 * `GET /api/pods/{name}/git/deployments/{id}/log`: the build log as plain text, streamed while the
 * deployment runs (D1 is read every 500 ms for new chunks) and ended when it is over; for a
 * finished deployment, the whole log at once.
 */
export async function streamDeploymentLog({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<ReadableStream<Uint8Array>>> {
  const found = await findDeployment(ctx, teamId, input.name, input.id);
  if (!found.ok) return found;
  const { pod, deployment } = found.value;
  const mask = await tokenToMask(ctx, pod.id);
  const encoder = new TextEncoder();
  const started = Date.now();
  let next = 0;
  let over = false;
  return ok(
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          // Whether it was over is read before the chunks: the last chunks arrive before the outcome.
          const [row] = over
            ? []
            : await ctx.db
                .select({ stage: deployments.stage })
                .from(deployments)
                .where(eq(deployments.id, deployment.id));
          const ended = over || !row || row.stage === "done" || Date.now() - started > STREAM_MAX_MS;
          const chunks = await logChunks(ctx.db, deployment.id, next);
          if (chunks.length > 0) {
            next = (chunks.at(-1)?.seq ?? next) + 1;
            over = ended;
            controller.enqueue(encoder.encode(redactSecret(chunks.map((c) => c.chunk).join(""), mask)));
            return;
          }
          if (ended) {
            controller.close();
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      },
    }),
  );
}

/**
 * `POST /api/pods/{name}/git/rollback`: a new deployment (trigger `rollback`) switching the pod back
 * to the release of `deployment_id`, by default the newest successful deployment before the one
 * serving. 409 when there is nothing to go back to; 404 when the release is no longer kept.
 */
export async function rollbackPod({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; deployment_id?: string }>): Promise<Result<StartedView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const serving = await servingDeployment(ctx.db, pod.id);
  let target: DeploymentRow | undefined;
  if (input.deployment_id) {
    [target] = await ctx.db
      .select()
      .from(deployments)
      .where(and(eq(deployments.id, input.deployment_id), eq(deployments.podId, pod.id)));
    if (!target) return fail("not_found", `deployment ${input.deployment_id} not found`);
    if (!target.release || (target.status !== "success" && target.status !== "rolled_back"))
      return fail(
        "conflict",
        `deployment ${target.id} did not succeed; there is no release of it to roll back to`,
      );
    if (serving && serving.release === target.release)
      return fail("conflict", `deployment ${target.id}'s release is the one serving now`);
  } else {
    if (!serving) return fail("conflict", `pod ${pod.name} has no successful deployment to roll back from`);
    [target] = await ctx.db
      .select()
      .from(deployments)
      .where(
        and(
          eq(deployments.podId, pod.id),
          ne(deployments.id, serving.id),
          ne(deployments.status, "failed"),
          ne(deployments.status, "deploying"),
          ne(deployments.release, serving.release ?? ""),
        ),
      )
      .orderBy(desc(deployments.finishedAt))
      .limit(1);
    if (!target?.release)
      return fail("conflict", `pod ${pod.name} has no earlier successful deployment to roll back to`);
  }
  const config = await configOf(ctx, pod.id);
  const kept = config ? (JSON.parse(config.keptReleases) as string[]) : [];
  if (!kept.includes(target.release ?? ""))
    return fail(
      "not_found",
      `the release of deployment ${target.id} is no longer kept on the pod's host; deploy again instead`,
    );
  const row = await enqueueDeployment(ctx.env, ctx.db, pod.id, {
    trigger: "rollback",
    rollbackOf: target.id,
    release: target.release,
    commitSha: target.commitSha,
    commitMessage: target.commitMessage,
  });
  return ok(toDeploymentView(row));
}
