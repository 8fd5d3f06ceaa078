import { and, eq, inArray, isNotNull } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { invoices, pods, subscriptions } from "../../db/schema";
import { callHost } from "../../durable-objects/host-agent/client";
import { nowIso } from "../../lib/time";
import { resolveBillingAlerts } from "../alerts/billing";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "../pods/events";
import { type BillingCall, requireBillingOwner } from "./access";
import { ensureSubscription, type SubscriptionView, toSubscriptionView } from "./subscriptions";

/**
 * A suspended team's pods do not run. Suspension stops each running pod on its host and moves it to
 * `suspended` (its files kept; it is charged as a stopped pod is) with a `suspended` event; `resume`
 * starts every `suspended` pod again (`started` event) once the team is settled. The host is asked
 * first and the status follows its answer: a pod whose host cannot be reached stays as it is and the
 * billing cron tries again on its next run (`enforceSuspensions`), so a pod is never marked
 * suspended while it still runs, nor left suspended once the team is active.
 *
 * The statuses: `suspended` is the control plane's (services/pods/host-sync.ts leaves it alone), so
 * a host's report about the stopped container does not turn it back into `stopped`.
 */

/** start and stop wait up to 30 s for the host (as the power routes do) */
const POWER_TIMEOUT_MS = 30_000;
/** pods of one team moved at once; a team's pods on many hosts go in parallel, bounded */
const PARALLEL = 8;
/** teams the cron looks at per run: the rest are next run's */
const TEAMS_PER_RUN = 100;

export interface SuspensionOutcome {
  moved: string[];
  /** pods whose host failed or could not be reached: the cron tries again */
  left: { name: string; reason: string }[];
}

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += PARALLEL) await Promise.all(items.slice(i, i + PARALLEL).map(fn));
}

/** Stops the team's running pods and marks them `suspended`. */
export async function suspendTeamPods(
  ctx: Pick<ServiceContext, "db" | "env">,
  teamId: string,
): Promise<SuspensionOutcome> {
  const running = await ctx.db
    .select({ id: pods.id, name: pods.name, hostId: pods.hostId })
    .from(pods)
    .where(and(eq(pods.teamId, teamId), eq(pods.status, "running"), isNotNull(pods.hostId)));
  const outcome: SuspensionOutcome = { moved: [], left: [] };
  await inBatches(running, async (pod) => {
    if (!pod.hostId) return;
    const stopped = await callHost(
      ctx.env,
      pod.hostId,
      "pod.stop",
      { name: pod.name },
      { timeoutMs: POWER_TIMEOUT_MS, teamId },
    );
    if (!stopped.ok) {
      outcome.left.push({ name: pod.name, reason: stopped.message });
      return;
    }
    // The host's answer made it `stopped` already (host-sync); a pod the user deleted meanwhile stays deleted.
    const [marked] = await ctx.db.batch([
      ctx.db
        .update(pods)
        .set({ status: "suspended", updatedAt: nowIso() })
        .where(and(eq(pods.id, pod.id), inArray(pods.status, ["running", "stopped"])))
        .returning({ id: pods.id }),
      recordEventStatement(
        ctx.db,
        pod.id,
        "suspended",
        "pod suspended: the team's subscription is suspended for unpaid invoices; its files are kept, and it starts again when the team pays and resumes",
        { source: "billing" },
      ),
    ]);
    if (marked.length > 0) outcome.moved.push(pod.name);
  });
  return outcome;
}

const STATUS_OF_STATE = { running: "running", stopped: "stopped", missing: "error" } as const;

/** Starts the team's `suspended` pods again and marks them `running`. */
export async function resumeTeamPods(
  ctx: Pick<ServiceContext, "db" | "env">,
  teamId: string,
): Promise<SuspensionOutcome> {
  const suspended = await ctx.db
    .select({ id: pods.id, name: pods.name, hostId: pods.hostId })
    .from(pods)
    .where(and(eq(pods.teamId, teamId), eq(pods.status, "suspended"), isNotNull(pods.hostId)));
  const outcome: SuspensionOutcome = { moved: [], left: [] };
  await inBatches(suspended, async (pod) => {
    if (!pod.hostId) return;
    const started = await callHost(
      ctx.env,
      pod.hostId,
      "pod.start",
      { name: pod.name },
      { timeoutMs: POWER_TIMEOUT_MS, teamId },
    );
    if (!started.ok) {
      outcome.left.push({ name: pod.name, reason: started.message });
      return;
    }
    const [marked] = await ctx.db.batch([
      ctx.db
        .update(pods)
        .set({
          status: STATUS_OF_STATE[started.value.state],
          ...(started.value.ip ? { ip: started.value.ip } : {}),
          updatedAt: nowIso(),
        })
        .where(and(eq(pods.id, pod.id), eq(pods.status, "suspended")))
        .returning({ id: pods.id }),
      recordEventStatement(
        ctx.db,
        pod.id,
        "started",
        "pod started again: the team's subscription is active",
        {
          source: "billing",
        },
      ),
    ]);
    if (marked.length > 0) outcome.moved.push(pod.name);
  });
  return outcome;
}

/**
 * The cron's part, on every run: pods still running on a suspended team are suspended, pods still
 * suspended on a team that is active again are started (their host was unreachable the first time).
 * Cheap when nothing is due: one indexed read per direction.
 */
export async function enforceSuspensions(ctx: Pick<ServiceContext, "db" | "env">): Promise<void> {
  if (!ctx.env.STRIPE_SECRET_KEY) return; // enforcement off: nothing is stopped for billing
  const toSuspend = await ctx.db
    .selectDistinct({ teamId: pods.teamId })
    .from(pods)
    .innerJoin(subscriptions, eq(subscriptions.teamId, pods.teamId))
    .where(and(eq(subscriptions.status, "suspended"), eq(pods.status, "running"), isNotNull(pods.hostId)))
    .limit(TEAMS_PER_RUN);
  const toResume = await ctx.db
    .selectDistinct({ teamId: pods.teamId })
    .from(pods)
    .innerJoin(subscriptions, eq(subscriptions.teamId, pods.teamId))
    .where(
      and(
        inArray(subscriptions.status, ["active", "trialing", "past_due"]),
        eq(pods.status, "suspended"),
        isNotNull(pods.hostId),
      ),
    )
    .limit(TEAMS_PER_RUN);
  for (const { teamId } of toSuspend) report("suspend", teamId, await suspendTeamPods(ctx, teamId));
  for (const { teamId } of toResume) report("resume", teamId, await resumeTeamPods(ctx, teamId));
}

function report(what: string, teamId: string, outcome: SuspensionOutcome) {
  if (outcome.left.length === 0) return;
  console.warn(
    JSON.stringify({ msg: `billing ${what}: pods left for the next run`, teamId, left: outcome.left }),
  );
}

/**
 * `past_due` or `suspended` back to `active` once no invoice is left unpaid; never un-cancels. The
 * pods the suspension stopped start again before the answer.
 */
export async function resumeSubscription({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<SubscriptionView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const existing = await ensureSubscription(ctx, caller.teamId);
  if (existing.status === "cancelled")
    return fail("conflict", "a cancelled subscription is not resumed; subscribe again");
  if (existing.status !== "past_due" && existing.status !== "suspended")
    return ok(toSubscriptionView(ctx, caller.teamId, existing));
  const unpaid = await ctx.db
    .select({ id: invoices.id })
    .from(invoices)
    .where(and(eq(invoices.teamId, caller.teamId), inArray(invoices.status, ["open", "draft"])));
  if (unpaid.length > 0)
    return fail("conflict", "pay the team's unpaid invoices before resuming", {
      unpaid_invoices: unpaid.map((i) => i.id),
    });
  const moved = await ctx.db
    .update(subscriptions)
    .set({ status: "active", pastDueSince: null, updatedAt: nowIso() })
    .where(and(eq(subscriptions.id, existing.id), inArray(subscriptions.status, ["past_due", "suspended"])))
    .returning({ id: subscriptions.id });
  if (moved.length > 0) await resolveBillingAlerts(ctx.env, ctx.db, caller.teamId);
  // The pods the suspension stopped start again (a host that cannot be reached now: the cron's next run).
  await resumeTeamPods(ctx, caller.teamId);
  return ok(toSubscriptionView(ctx, caller.teamId, { ...existing, status: "active", pastDueSince: null }));
}
