import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Git deployments (docs/git.md). A pod has at most one repository connected (`git_configs`, keyed by
 * the pod). Secrets are stored encrypted (AES-GCM, key from the GIT_TOKEN_KEY secret:
 * worker/services/git/secrets.ts): the user's access token and the webhook secret that both the
 * git host's hook and the generic webhook are checked against.
 */
export const gitConfigs = sqliteTable(
  "git_configs",
  {
    podId: text("pod_id").primaryKey(),
    repoUrl: text("repo_url").notNull(),
    /** the URL reduced for matching a push's repository: lowercase host and path, no `.git`, no slash */
    repoKey: text("repo_key").notNull(),
    branch: text("branch").notNull(),
    autoDeploy: integer("auto_deploy", { mode: "boolean" }).notNull(),
    /** null: detected on each deploy */
    buildCommand: text("build_command"),
    tokenEncrypted: text("token_encrypted"),
    webhookSecretEncrypted: text("webhook_secret_encrypted").notNull(),
    /** the git host's hook id, when the service created one */
    hookId: text("hook_id"),
    /** why no hook was created (no token, not a hosted repository, the host refused …) */
    hookNote: text("hook_note"),
    /** releases the host still keeps (newest first), from the last deploy's outcome: what rollback may name */
    keptReleases: text("kept_releases").notNull().default("[]"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("git_configs_repo_key_idx").on(t.repoKey)],
);

export type GitConfigRow = typeof gitConfigs.$inferSelect;

export const DEPLOYMENT_STATUSES = ["deploying", "success", "failed", "rolled_back"] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
export const DEPLOYMENT_TRIGGERS = ["push", "manual", "rollback"] as const;
export type DeploymentTrigger = (typeof DEPLOYMENT_TRIGGERS)[number];
/** Where a deployment is in the pod's queue: waiting its turn, the one running, or over. */
export const DEPLOYMENT_STAGES = ["queued", "running", "done"] as const;

/**
 * A pod's deployments, kept after a disconnect (history). One deploy runs at a time per pod: the
 * partial unique index lets one row per pod be `running`; a trigger during a deploy is `queued`,
 * and a newer trigger supersedes the queued one (it ends `failed`, "superseded by …").
 */
export const deployments = sqliteTable(
  "deployments",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    trigger: text("trigger", { enum: DEPLOYMENT_TRIGGERS }).notNull(),
    status: text("status", { enum: DEPLOYMENT_STATUSES }).notNull(),
    stage: text("stage", { enum: DEPLOYMENT_STAGES }).notNull(),
    commitSha: text("commit_sha"),
    commitMessage: text("commit_message"),
    /** the release serving after this deployment succeeded (a rollback's is its target's) */
    release: text("release"),
    /** a rollback's target deployment */
    rollbackOf: text("rollback_of"),
    failureClass: text("failure_class"),
    failureMessage: text("failure_message"),
    createdAt: text("created_at").notNull(),
    startedAt: text("started_at"),
    finishedAt: text("finished_at"),
    /** the host's own measure of the deploy's wall time (ms), counted against the plan's build budget */
    buildMs: integer("build_ms"),
  },
  (t) => [
    index("deployments_pod_created_idx").on(t.podId, t.createdAt),
    uniqueIndex("deployments_one_running_idx").on(t.podId).where(sql`stage = 'running'`),
  ],
);

export type DeploymentRow = typeof deployments.$inferSelect;

/** A deployment's build log as the agent sends it (`agent:deploy-log`), one row per chunk. */
export const deploymentLogChunks = sqliteTable(
  "deployment_log_chunks",
  {
    deploymentId: text("deployment_id").notNull(),
    seq: integer("seq").notNull(),
    chunk: text("chunk").notNull(),
    bytes: integer("bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.seq] })],
);

/**
 * Push deliveries already taken, so a replayed one is refused: by id (`X-GitHub-Delivery`) and by
 * body (`body#<sha256 hex>`, the part the signature covers), one row each; pruned after 7 days.
 */
export const gitWebhookDeliveries = sqliteTable(
  "git_webhook_deliveries",
  {
    id: text("id").primaryKey(),
    receivedAt: text("received_at").notNull(),
  },
  (t) => [index("git_webhook_deliveries_received_idx").on(t.receivedAt)],
);
