import { and, desc, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { type DeploymentRow, deployments, type GitConfigRow, gitConfigs, type PodRow } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext, TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { NOT_RUNNING } from "../pods/target";
import { cancelQueued } from "./queue";
import { checkBranch, checkBuildCommand, checkRepoUrl, hostedRepo, repoKey } from "./repo-url";
import { createPushHook, deletePushHook } from "./repohost";
import {
  newWebhookSecret,
  openToken,
  openWebhookSecret,
  sealToken,
  sealWebhookSecret,
  secretsUsable,
} from "./secrets";
import { type GitConfigView, genericWebhookUrl, repohostWebhookUrl, toGitConfigView } from "./views";

export interface ConnectInput {
  repo_url: string;
  branch?: string;
  auth_token?: string;
  build_command?: string;
  auto_deploy?: boolean;
}

/** The connect answer: the configuration plus the generic webhook's secret, shown this once. */
export type ConnectedView = GitConfigView & { webhook_secret: string };

const lastDeployment = async (ctx: ServiceContext, podId: string): Promise<DeploymentRow | undefined> =>
  (
    await ctx.db
      .select()
      .from(deployments)
      .where(eq(deployments.podId, podId))
      .orderBy(desc(deployments.createdAt))
      .limit(1)
  )[0];

export const configOf = async (ctx: ServiceContext, podId: string): Promise<GitConfigRow | undefined> =>
  (await ctx.db.select().from(gitConfigs).where(eq(gitConfigs.podId, podId)).limit(1))[0];

const alreadyConnected = (pod: PodRow) =>
  fail(
    "conflict",
    `a repository is already connected to pod ${pod.name}; change it with PUT or disconnect it first (DELETE /api/pods/${pod.name}/git)`,
  );

/** The input checked: a URL the service may fetch, a branch name, a one-line build command. */
export function checkConnectInput(ctx: ServiceContext, input: ConnectInput) {
  const url = checkRepoUrl(ctx.env, input.repo_url);
  if (!url.ok) return url;
  const branch = checkBranch(input.branch ?? "main");
  if (!branch.ok) return branch;
  const build = checkBuildCommand(input.build_command);
  if (!build.ok) return build;
  const usable = secretsUsable(ctx.env);
  if (!usable.ok) return usable;
  return ok({ repoUrl: input.repo_url, branch: branch.value, buildCommand: build.value });
}

/**
 * Stores the configuration of a pod (connect and from-repo) and, for a hosted repository with a
 * token, creates its push hook. A hook that cannot be made does not fail the connect: the answer's
 * `webhook` says `auto: false` and why, and the generic webhook works either way.
 */
export async function storeConfig(
  ctx: ServiceContext,
  pod: PodRow,
  input: ConnectInput,
): Promise<Result<ConnectedView>> {
  const checked = checkConnectInput(ctx, input);
  if (!checked.ok) return checked;
  const secret = newWebhookSecret();
  const sealedSecret = await sealWebhookSecret(ctx.env, pod.id, secret);
  if (!sealedSecret.ok) return sealedSecret;
  const sealedToken = input.auth_token ? await sealToken(ctx.env, pod.id, input.auth_token) : undefined;
  if (sealedToken && !sealedToken.ok) return sealedToken;
  const now = nowIso();
  const row: GitConfigRow = {
    podId: pod.id,
    repoUrl: checked.value.repoUrl,
    repoKey: repoKey(checked.value.repoUrl),
    branch: checked.value.branch,
    autoDeploy: input.auto_deploy ?? true,
    buildCommand: checked.value.buildCommand,
    tokenEncrypted: sealedToken?.value ?? null,
    webhookSecretEncrypted: sealedSecret.value,
    hookId: null,
    hookNote: null,
    keptReleases: "[]",
    createdAt: now,
    updatedAt: now,
  };
  const inserted = await ctx.db
    .insert(gitConfigs)
    .values(row)
    .onConflictDoNothing()
    .returning({ id: gitConfigs.podId });
  if (inserted.length === 0) return alreadyConnected(pod);

  const hook = await makeHook(ctx, row, input.auth_token, secret);
  row.hookId = hook.hookId;
  row.hookNote = hook.note;
  await ctx.db.batch([
    ctx.db
      .update(gitConfigs)
      .set({ hookId: hook.hookId, hookNote: hook.note })
      .where(eq(gitConfigs.podId, pod.id)),
    recordEventStatement(
      ctx.db,
      pod.id,
      "git_connected",
      `repository ${row.repoUrl} (${row.branch}) connected`,
      {
        repo_url: row.repoUrl,
        branch: row.branch,
        auto_webhook: hook.hookId !== null,
      },
    ),
  ]);
  return ok({ ...toGitConfigView(ctx.env, pod.name, row, undefined), webhook_secret: secret });
}

async function makeHook(
  ctx: ServiceContext,
  row: GitConfigRow,
  token: string | undefined,
  secret: string,
): Promise<{ hookId: string | null; note: string | null }> {
  const repo = hostedRepo(ctx.env, row.repoUrl);
  if (!repo) return { hookId: null, note: "not a repository of the git host: use the generic webhook" };
  if (!token)
    return {
      hookId: null,
      note: "no auth_token given: the push hook could not be created; use the generic webhook",
    };
  const created = await createPushHook(ctx.env, token, repo, { url: repohostWebhookUrl(ctx.env), secret });
  if (created.ok) return { hookId: created.value, note: null };
  console.warn(JSON.stringify({ msg: "push hook not created", podId: row.podId, error: created.message }));
  return {
    hookId: null,
    note: `the git host refused to create the push hook (${created.message}); the token needs admin:repo_hook, or use the generic webhook`,
  };
}

/** `POST /api/pods/{name}/git` */
export async function connectRepository({
  ctx,
  teamId,
  input,
}: TeamCall<ConnectInput & { name: string }>): Promise<Result<ConnectedView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  if (await configOf(ctx, pod.id)) return alreadyConnected(pod);
  return storeConfig(ctx, pod, input);
}

/** `GET /api/pods/{name}/git`: the configuration, or null. */
export async function getRepository({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<GitConfigView | null>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const config = await configOf(ctx, pod.id);
  if (!config) return ok(null);
  return ok(toGitConfigView(ctx.env, pod.name, config, await lastDeployment(ctx, pod.id)));
}

const notConnected = (name: string) => fail("not_found", `no repository is connected to pod ${name}`);

/**
 * `GET /api/pods/{name}/git/webhook-secret`: the generic webhook's secret, for the pod's team, when
 * asked (the dashboard's Reveal button; a CI job being set up after the connect answer was lost).
 * Anyone of the team could disconnect and connect again for a new one, so reading it gives nothing
 * more; it is never part of `GET /git`, so it is in no page or log until someone asks for it.
 */
export async function revealWebhookSecret({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<{ webhook_url: string; webhook_secret: string }>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const config = await configOf(ctx, pod.id);
  if (!config) return notConnected(pod.name);
  const secret = await openWebhookSecret(ctx.env, pod.id, config.webhookSecretEncrypted);
  if (!secret.ok) return secret;
  return ok({ webhook_url: genericWebhookUrl(ctx.env, pod.name), webhook_secret: secret.value });
}

/** `PUT /api/pods/{name}/git`: only the given fields change. */
export async function updateRepository({
  ctx,
  teamId,
  input,
}: TeamCall<{
  name: string;
  branch?: string;
  build_command?: string | null;
  auto_deploy?: boolean;
}>): Promise<Result<GitConfigView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const config = await configOf(ctx, pod.id);
  if (!config) return notConnected(pod.name);
  const change: Partial<GitConfigRow> = { updatedAt: nowIso() };
  if (input.branch !== undefined) {
    const branch = checkBranch(input.branch);
    if (!branch.ok) return branch;
    change.branch = branch.value;
  }
  if (input.build_command !== undefined) {
    const build = checkBuildCommand(input.build_command);
    if (!build.ok) return build;
    change.buildCommand = build.value;
  }
  if (input.auto_deploy !== undefined) change.autoDeploy = input.auto_deploy;
  await ctx.db.update(gitConfigs).set(change).where(eq(gitConfigs.podId, pod.id));
  return ok(toGitConfigView(ctx.env, pod.name, { ...config, ...change }, await lastDeployment(ctx, pod.id)));
}

/**
 * `DELETE /api/pods/{name}/git`: the push hook is deleted at the git host (best effort: a hook the
 * host will not delete is logged and the answer's `webhook_removed` is false), the configuration
 * goes, queued deployments end failed; the deployed code and the history stay.
 */
export async function disconnectRepository({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<{ status: "disconnected"; webhook_removed: boolean }>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const config = await configOf(ctx, pod.id);
  if (!config) return notConnected(pod.name);
  let removed = config.hookId === null;
  const repo = hostedRepo(ctx.env, config.repoUrl);
  if (config.hookId && repo && config.tokenEncrypted) {
    const token = await openToken(ctx.env, pod.id, config.tokenEncrypted);
    const deleted = token.ok ? await deletePushHook(ctx.env, token.value, repo, config.hookId) : token;
    removed = deleted.ok;
    if (!deleted.ok)
      console.warn(JSON.stringify({ msg: "push hook not deleted", podId: pod.id, error: deleted.message }));
  }
  await ctx.db.batch([
    ctx.db.delete(gitConfigs).where(and(eq(gitConfigs.podId, pod.id))),
    recordEventStatement(ctx.db, pod.id, "git_disconnected", `repository ${config.repoUrl} disconnected`, {
      repo_url: config.repoUrl,
    }),
  ]);
  await cancelQueued(ctx.env, ctx.db, pod.id, "the repository was disconnected");
  return ok({ status: "disconnected", webhook_removed: removed });
}
