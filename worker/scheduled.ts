import { createDb, type Db } from "./db/client";
import { pruneRouteChanges } from "./edge/routes";
import type { Bindings } from "./env";
// invoices paid by the cron earn affiliate commissions too (registers the paid-invoice hook)
import "./services/affiliates/commission";
import { expireVisits } from "./services/affiliates/visit";
import { redispatchPendingDeliveries } from "./services/alerts/deliver";
import { pruneAuditLog } from "./services/audit/retention";
import { runDueSchedules } from "./services/backups/schedule";
import { sweepStuckBackups } from "./services/backups/sweep";
import { runBilling } from "./services/billing/job";
import { enforceSuspensions } from "./services/billing/suspension";
import { sweepStagedBlobs } from "./services/blobs/staging";
import { failStuckAgentInstalls } from "./services/coding-agents/stuck";
import { sweepExpiredGrants } from "./services/connectors/grants";
import { recheckVerifiedDomains } from "./services/domains/recheck";
import { pollDomainTls } from "./services/domains/tls";
import { redispatchQueuedMail } from "./services/mail/delivery";
import { createMailer } from "./services/mail/mailer";
import { rollUpAndPruneMetrics } from "./services/metrics/retention";
import { failStuckCreations } from "./services/pods/create-outcome";
import { settleStuckResizes } from "./services/pods/resize-reservation";
import { failStuckInstalls } from "./services/services/stuck";
import { finishKeyRemovals } from "./services/ssh/key-records";

/**
 * The Worker's cron work (wrangler.toml `[triggers] crons`). Every trigger runs every job; a job
 * decides for itself what is due (each is idempotent and cheap when there is nothing to do). A
 * failing job is logged and does not stop the others. To add one, append it to `scheduledJobs`.
 */
export interface ScheduledJob {
  name: string;
  run(ctx: { db: Db; env: Bindings; now: number }): Promise<void>;
}

export const scheduledJobs: ScheduledJob[] = [
  { name: "pod-metrics-retention", run: ({ db, now }) => rollUpAndPruneMetrics(db, now) },
  { name: "staged-blob-sweep", run: ({ env, now }) => sweepStagedBlobs(env, now).then(() => undefined) },
  {
    // Keys of members who left a team, still in pods whose host was unreachable when they left.
    name: "departed-member-keys",
    run: ({ env, db }) => finishKeyRemovals({ db, env, mailer: createMailer(db, env) }).then(() => undefined),
  },
  // Daily pod charges, invoicing of ended periods, suspension after the grace period, then the
  // suspended teams' pods stopped and those of resumed teams started (docs/billing.md).
  {
    name: "billing",
    run: async (ctx) => {
      await runBilling(ctx);
      await enforceSuspensions(ctx);
    },
  },
  {
    name: "stuck-creations",
    run: ({ env, db, now }) => failStuckCreations(env, db, now).then(() => undefined),
  },
  // Due pods' scheduled backups, a page at a time (services/backups/schedule.ts).
  {
    name: "backup-schedules",
    run: ({ env, db, now }) => runDueSchedules(env, db, now).then(() => undefined),
  },
  // Backups and restores interrupted past every bound: failed, their objects deleted.
  { name: "stuck-backups", run: ({ env, db, now }) => sweepStuckBackups(env, db, now).then(() => undefined) },
  // Connector grants past their 30 days (docs/connectors.md).
  {
    name: "expired-connector-grants",
    run: ({ db, now }) => sweepExpiredGrants(db, now).then(() => undefined),
  },
  // Resizes a cut request left holding their host room: undone, the room given back (docs/pods.md).
  {
    name: "stuck-resizes",
    run: ({ env, db, now }) => settleStuckResizes(env, db, now).then(() => undefined),
  },
  {
    name: "stuck-service-installs",
    run: ({ env, db, now }) => failStuckInstalls(env, db, now).then(() => undefined),
  },
  // Referral-link clicks past the 30-day window (anonymous rows: docs/affiliates.md).
  { name: "affiliate-visits-expiry", run: ({ db, now }) => expireVisits(db, now).then(() => undefined) },
  // Verified custom domains whose TXT record is gone for 72 hours are released (docs/domains.md).
  {
    name: "domain-recheck",
    run: ({ env, db, now }) =>
      recheckVerifiedDomains({ db, env, mailer: createMailer(db, env) }, now).then(() => undefined),
  },
  // Verified custom domains' certificates polled until active; hostnames Cloudflare failed to delete, again (docs/domains.md).
  {
    name: "domain-tls",
    run: ({ env, db }) => pollDomainTls({ db, env, mailer: createMailer(db, env) }).then(() => undefined),
  },
  // Alert deliveries whose alert-deliver Workflow never started (docs/alerts.md).
  {
    name: "alert-redispatch",
    run: ({ env, db, now }) => redispatchPendingDeliveries(env, db, now).then(() => undefined),
  },
  // Queued mails whose mail-send Workflow never started (docs/mail.md).
  {
    name: "mail-redispatch",
    run: ({ env, db, now }) => redispatchQueuedMail(env, db, now).then(() => undefined),
  },
  // Audit log rows past their team's retention, a bounded page set per run (docs/audit.md).
  { name: "audit-retention", run: ({ db, now }) => pruneAuditLog(db, now).then(() => undefined) },
  { name: "edge-route-feed", run: ({ env, now }) => pruneRouteChanges(env, now) },
  {
    name: "stuck-agent-installs",
    run: ({ env, db, now }) => failStuckAgentInstalls(env, db, now).then(() => undefined),
  },
];

export async function runScheduledJobs(env: Bindings, now = Date.now(), jobs = scheduledJobs): Promise<void> {
  const db = createDb(env.DB);
  const results = await Promise.allSettled(jobs.map((job) => job.run({ db, env, now })));
  results.forEach((r, i) => {
    if (r.status === "rejected") {
      console.error(
        JSON.stringify({ msg: "scheduled job failed", job: jobs[i]?.name, error: String(r.reason) }),
      );
    }
  });
}
