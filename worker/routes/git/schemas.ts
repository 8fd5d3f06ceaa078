import { z } from "@hono/zod-openapi";
import { DEPLOYMENT_STATUSES, DEPLOYMENT_TRIGGERS } from "../../db/schema";

/** Schemas the git routes share (docs/git.md). */

export const RepoUrl = z.string().min(1).max(2048).openapi({
  description:
    "HTTPS Git URL of the repository, without credentials (give a token as auth_token); http:// only for loopback hosts where ALLOW_HTTP_GIT_LOOPBACK is on",
  example: "https://github.com/acme/site.git",
});

export const Branch = z.string().min(1).max(255).openapi({ example: "main" });

export const AuthToken = z.string().min(1).max(1024).openapi({
  description:
    "personal access token for a private repository (and, for a hosted repository, to create the push hook and report commit statuses: scopes repo / admin:repo_hook / repo:status). Stored encrypted, never returned",
});

export const BuildCommand = z
  .string()
  .max(2000)
  .openapi({ description: "one line; empty means detected on each deploy", example: "npm run build" });

export const DeploymentIdParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
});

export const Deployment = z
  .object({
    id: z.string(),
    status: z.enum(DEPLOYMENT_STATUSES),
    trigger: z.enum(DEPLOYMENT_TRIGGERS),
    commit_sha: z.string().nullable().openapi({ description: "null until the host has fetched the commit" }),
    commit_message: z.string().nullable(),
    created_at: z.string(),
    started_at: z
      .string()
      .nullable()
      .openapi({ description: "null while it waits for the pod's running deployment (queued)" }),
    finished_at: z.string().nullable(),
    rollback_of: z.string().nullable().openapi({ description: "a rollback's target deployment" }),
    failure: z
      .object({ class: z.string(), message: z.string() })
      .nullable()
      .openapi({ description: "a failed deployment's class (as the deploy_failed event's) and reason" }),
  })
  .openapi("Deployment");

export const GitConfig = z
  .object({
    repo_url: z.string(),
    branch: z.string(),
    auto_deploy: z.boolean(),
    build_command: z.string(),
    last_deployment: z
      .object({
        id: z.string(),
        status: z.enum(DEPLOYMENT_STATUSES),
        commit_sha: z.string().nullable(),
        commit_message: z.string().nullable(),
        created_at: z.string(),
        finished_at: z.string().nullable(),
      })
      .nullable(),
    created_at: z.string(),
    webhook: z
      .object({ auto: z.boolean(), note: z.string().nullable() })
      .openapi({ description: "the git host's push hook: created by the service (auto), or why not" }),
    webhook_url: z.string().openapi({ description: "this pod's generic push webhook" }),
  })
  .openapi("GitConfig");

export const ConnectedGitConfig = GitConfig.extend({
  webhook_secret: z.string().openapi({
    description:
      "the secret of the generic webhook (X-Webhook-Secret) and of the git host's hook; shown only in this answer",
  }),
}).openapi("ConnectedGitConfig");

export const PushAnswer = z
  .object({ status: z.literal("ignored"), reason: z.string() })
  .openapi("IgnoredPush");

export const tags = ["Git deployment"];
