import { verify } from "@octokit/webhooks-methods";
import { and, eq, inArray, lt, ne } from "drizzle-orm";
import { z } from "zod";
import { fail, ok, type Result } from "../../../shared/errors";
import { type GitConfigRow, gitConfigs, gitWebhookDeliveries, pods } from "../../db/schema";
import { DAY, nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { enqueueDeployment } from "./queue";
import { repoKey } from "./repo-url";
import { constantTimeEqual, openWebhookSecret } from "./secrets";
import { type DeploymentView, toDeploymentView } from "./views";

/**
 * The two public push webhooks. Both end in `decidePush`: only the configured branch deploys, a
 * head commit saying `[skip deploy]` does not, nor anything while `auto_deploy` is off. An ignored
 * push answers 200 `{status: "ignored", reason}`, a deploy 202 with the deployment.
 */

export type PushAnswer = { status: "ignored"; reason: string } | DeploymentView;

const SKIP = "[skip deploy]";
const ZERO_SHA = /^0{40}$/;

interface Push {
  ref?: string;
  sha?: string;
  message?: string;
}

async function decidePush(
  ctx: ServiceContext,
  config: GitConfigRow,
  push: Push,
): Promise<Result<PushAnswer>> {
  const ignored = (reason: string) => ok({ status: "ignored" as const, reason });
  if (!config.autoDeploy) return ignored("auto_deploy is off for this repository");
  if (push.ref !== undefined) {
    const branch = push.ref.replace(/^refs\/heads\//, "");
    if (!push.ref.startsWith("refs/heads/") && push.ref.startsWith("refs/"))
      return ignored(`${push.ref} is not a branch`);
    if (branch !== config.branch) return ignored(`push to ${branch}; the pod deploys ${config.branch}`);
  }
  if (push.sha && ZERO_SHA.test(push.sha)) return ignored("the branch was deleted");
  if (push.message?.includes(SKIP)) return ignored(`the head commit says ${SKIP}`);
  const [pod] = await ctx.db.select({ status: pods.status }).from(pods).where(eq(pods.id, config.podId));
  if (pod?.status !== "running") return ignored(`the pod is ${pod?.status ?? "gone"}, not running`);
  const row = await enqueueDeployment(ctx.env, ctx.db, config.podId, {
    trigger: "push",
    commitSha: push.sha ?? null,
    commitMessage: push.message?.slice(0, 4096) ?? null,
  });
  return ok(toDeploymentView(row));
}

/** The fields of the git host's `push` event this service reads. */
const PushEvent = z.object({
  ref: z.string().max(1024),
  after: z.string().regex(/^[0-9a-f]{40}$/),
  head_commit: z.object({ message: z.string() }).nullable().optional(),
  repository: z.object({
    clone_url: z.string().max(2048).optional(),
    html_url: z.string().max(2048).optional(),
  }),
});

const SIGNATURE = /^sha256=[0-9a-f]{64}$/;

/**
 * `POST /api/webhooks/repohost`: a push from the git host's hook (its `push` payload). The hook's
 * signature (`X-Hub-Signature-256`, HMAC-SHA256 of the body with the repository's secret) selects
 * the configuration among those of the repository, checked in constant time; a delivery id seen in
 * the last day is a replay and is ignored.
 */
export async function receiveRepohostPush(
  ctx: ServiceContext,
  request: { body: string; event?: string; delivery?: string; signature?: string },
): Promise<Result<PushAnswer>> {
  if (request.event === "ping")
    return ok({ status: "ignored", reason: "ping: the hook reaches the service" });
  if (request.event !== undefined && request.event !== "push")
    return ok({ status: "ignored", reason: `${request.event} events are not deployed` });
  if (!request.signature || !SIGNATURE.test(request.signature))
    return fail("unauthorized", "X-Hub-Signature-256: missing or not sha256=<hex>");
  let parsed: z.infer<typeof PushEvent>;
  try {
    const result = PushEvent.safeParse(JSON.parse(request.body));
    if (!result.success) return fail("bad_request", "body: not a push event (ref, after, repository)");
    parsed = result.data;
  } catch {
    return fail("bad_request", "body: must be JSON");
  }
  const keys = [parsed.repository.clone_url, parsed.repository.html_url]
    .filter((u): u is string => Boolean(u))
    .map(repoKey);
  const candidates =
    keys.length === 0
      ? []
      : await ctx.db.select().from(gitConfigs).where(inArray(gitConfigs.repoKey, keys)).limit(50);
  let config: GitConfigRow | undefined;
  for (const c of candidates) {
    const secret = await openWebhookSecret(ctx.env, c.podId, c.webhookSecretEncrypted);
    if (secret.ok && (await verify(secret.value, request.body, request.signature))) {
      config = c;
      break;
    }
  }
  if (!config) return fail("unauthorized", "X-Hub-Signature-256: the signature does not match");
  if (request.delivery && !(await firstDelivery(ctx, request.delivery)))
    return ok({
      status: "ignored",
      reason: `delivery ${request.delivery.slice(0, 100)} was already received`,
    });
  return decidePush(ctx, config, {
    ref: parsed.ref,
    sha: parsed.after,
    message: parsed.head_commit?.message,
  });
}

/** Records a delivery id; false when it was seen within the last day. Old ids go on the way. */
async function firstDelivery(ctx: ServiceContext, delivery: string): Promise<boolean> {
  const now = nowIso();
  const [inserted] = await ctx.db.batch([
    ctx.db
      .insert(gitWebhookDeliveries)
      .values({ id: delivery.slice(0, 200), receivedAt: now })
      .onConflictDoNothing()
      .returning({ id: gitWebhookDeliveries.id }),
    ctx.db
      .delete(gitWebhookDeliveries)
      .where(lt(gitWebhookDeliveries.receivedAt, new Date(Date.now() - DAY).toISOString())),
  ]);
  return inserted.length > 0;
}

const GenericPush = z
  .object({
    ref: z.string().max(1024).optional(),
    commit: z
      .string()
      .regex(/^[0-9a-f]{40}$/, { message: "must be a 40-character hex commit id" })
      .optional(),
    message: z.string().max(4096).optional(),
  })
  .strict();

const BAD_SECRET = "invalid webhook secret";

/**
 * `POST /api/webhooks/git/{podName}`: a push from anywhere (a CI job, another git host) carrying
 * the pod's webhook secret (`X-Webhook-Secret` or `?secret=`). The body is optional:
 * `{ref?, commit?, message?}`. An unknown pod, a pod without a repository and a wrong secret all
 * answer the same 401, so the endpoint tells a stranger nothing.
 */
export async function receiveGenericPush(
  ctx: ServiceContext,
  request: { podName: string; secret?: string; body: string },
): Promise<Result<PushAnswer>> {
  if (!request.secret) return fail("unauthorized", `${BAD_SECRET}: send it as X-Webhook-Secret`);
  const [row] = await ctx.db
    .select({ config: gitConfigs })
    .from(pods)
    .innerJoin(gitConfigs, eq(gitConfigs.podId, pods.id))
    .where(and(eq(pods.name, request.podName), ne(pods.status, "deleted")))
    .limit(1);
  const secret = row
    ? await openWebhookSecret(ctx.env, row.config.podId, row.config.webhookSecretEncrypted)
    : undefined;
  if (!row || !secret?.ok || !constantTimeEqual(secret.value, request.secret))
    return fail("unauthorized", BAD_SECRET);
  let push: z.infer<typeof GenericPush> = {};
  if (request.body.trim()) {
    let json: unknown;
    try {
      json = JSON.parse(request.body);
    } catch {
      return fail("bad_request", "body: must be JSON (or empty)");
    }
    const parsed = GenericPush.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return fail("bad_request", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
    }
    push = parsed.data;
  }
  return decidePush(ctx, row.config, {
    ...(push.ref !== undefined
      ? { ref: push.ref.startsWith("refs/") ? push.ref : `refs/heads/${push.ref}` }
      : {}),
    sha: push.commit,
    message: push.message,
  });
}
