import { and, eq, gte, sql } from "drizzle-orm";
import { findPlan, PLANS } from "../../../shared/catalog";
import { type Result, rateLimited } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { deployments, pods } from "../../db/schema";

/**
 * The build budget (docs/git.md "Build budget"): a pod may spend its plan's `buildMinutesPerDay` of
 * deploy time on its host per UTC day. A build runs beside the pod at a low CPU weight, so without a
 * budget back-to-back deploys would make a Launch pod use the host like a larger one. The time is
 * the host's own measure of each deploy and rollback (`build_ms` in its outcome; a deploy that
 * reported none, an older agent's or one that never answered, counts from its start to its end).
 * Checked before a deploy is queued (429) and again before it is dispatched (the deployment fails,
 * class `build_budget`); what is left is the dispatched deploy's time limit on the host.
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

export const buildBudgetMs = (planSlug: string): number =>
  (findPlan(planSlug) ?? (PLANS[0] as (typeof PLANS)[number])).buildMinutesPerDay * MINUTE;

const dayStart = (now: number) => new Date(Math.floor(now / DAY) * DAY).toISOString();

/** The build time the pod's deployments started today (UTC) have used. */
export async function usedBuildMs(db: Db, podId: string, now = Date.now()): Promise<number> {
  const [row] = await db
    .select({
      used: sql<number>`COALESCE(SUM(COALESCE(${deployments.buildMs},
        CAST((julianday(${deployments.finishedAt}) - julianday(${deployments.startedAt})) * 86400000 AS INTEGER),
        0)), 0)`,
    })
    .from(deployments)
    .where(and(eq(deployments.podId, podId), gte(deployments.startedAt, dayStart(now))));
  return Number(row?.used ?? 0);
}

export interface BuildBudget {
  budgetMs: number;
  usedMs: number;
  leftMs: number;
}

export async function buildBudget(
  db: Db,
  pod: { id: string; planSlug: string },
  now = Date.now(),
): Promise<BuildBudget> {
  const budgetMs = buildBudgetMs(pod.planSlug);
  const usedMs = await usedBuildMs(db, pod.id, now);
  return { budgetMs, usedMs, leftMs: Math.max(0, budgetMs - usedMs) };
}

/** Less than this left is as good as nothing: no deploy finishes in it. */
export const MIN_BUILD_LEFT_MS = 30_000;

export const budgetSpent = (pod: { name: string; planSlug: string }, b: BuildBudget): string => {
  const plan = findPlan(pod.planSlug);
  return `pod ${pod.name} has used ${Math.round(b.usedMs / MINUTE)} of its ${b.budgetMs / MINUTE} build minutes today (the ${plan?.name ?? pod.planSlug} plan's daily build budget); it starts again at 00:00 UTC, or move the pod to a larger plan`;
};

/** 429 with Retry-After (the seconds to the next UTC day) when the pod's build time for today is spent. */
export async function requireBuildBudget(
  db: Db,
  pod: { id: string; name: string; planSlug: string },
  now = Date.now(),
): Promise<Result<BuildBudget>> {
  const b = await buildBudget(db, pod, now);
  if (b.leftMs >= MIN_BUILD_LEFT_MS) return { ok: true, value: b };
  return rateLimited(budgetSpent(pod, b), Math.ceil((DAY - (now % DAY)) / 1000));
}

/**
 * The workflow's check before it dispatches a deploy: what is left of the pod's budget, the deploy's
 * time limit on the host, or why nothing is (a step's output: plain data).
 */
export async function budgetForDeploy(
  db: Db,
  podId: string,
  now = Date.now(),
): Promise<{ ok: true; leftMs: number } | { ok: false; message: string }> {
  const [pod] = await db
    .select({ id: pods.id, name: pods.name, planSlug: pods.planSlug })
    .from(pods)
    .where(eq(pods.id, podId));
  if (!pod) return { ok: false, message: "the pod is gone" };
  const checked = await requireBuildBudget(db, pod, now);
  return checked.ok ? { ok: true, leftMs: checked.value.leftMs } : { ok: false, message: checked.message };
}

/** The host's measure of a finished deploy, kept on its deployment. */
export async function recordBuildTime(db: Db, deploymentId: string, buildMs: number | undefined) {
  if (buildMs === undefined) return;
  await db
    .update(deployments)
    .set({ buildMs: Math.max(0, Math.round(buildMs)) })
    .where(eq(deployments.id, deploymentId));
}
