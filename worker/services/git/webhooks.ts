import { verify } from "@octokit/webhooks-methods";
import { and, eq, inArray, lt, ne } from "drizzle-orm";
import { z } from "zod";
import { fail, ok, type Result, rateLimited } from "../../../shared/errors";
import { type GitConfigRow, gitConfigs, gitWebhookDeliveries, pods } from "../../db/schema";
import { FAIR_SHARE_LIMITS } from "../../http/rate-limit";
import { sha256Hex } from "../../lib/crypto";
import { DAY, nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { enqueuePush } from "./queue";
import { repoKey } from "./repo-url";
import { constantTimeEqual, openWebhookSecret } from "./secrets";
import { type DeploymentView, toDeploymentView } from "./views";

/**
 * The two public push webhooks. Both end in `decidePush`: only the configured branch deploys, a
 * head commit saying `[skip deploy]` does not, nor anything while `auto_deploy` is off. An ignored
 * push answers 200 `{status: "ignored", reason}`, a deploy 202 with the deployment. A push that
 * would deploy counts against the pod's push budget (FAIR_SHARE_LIMITS.push, per pod and per team:
 * 429 beyond), and one arriving while another push's deployment waits takes that one's place
 * (`enqueuePush`): newest wins, and no row more.
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
  const [pod] = await ctx.db
    .select({ status: pods.status, teamId: pods.teamId })
    .from(pods)
    .where(eq(pods.id, config.podId));
  if (pod?.status !== "running") return ignored(`the pod is ${pod?.status ?? "gone"}, not running`);
  const budget = await spendPushBudget(ctx, config.podId, pod.teamId);
  if (!budget.ok) return budget;
  const row = await enqueuePush(ctx.env, ctx.db, config.podId, {
    commitSha: push.sha ?? null,
    commitMessage: push.message?.slice(0, 4096) ?? null,
  });
  return ok(toDeploymentView(row));
}

/** One push on the pod's and its team's budgets (the RateLimiter objects), or the 429 to answer. */
async function spendPushBudget(ctx: ServiceContext, podId: string, teamId: string): Promise<Result<true>> {
  const { perPod, perTeam, windowMs } = FAIR_SHARE_LIMITS.push;
  const caps: [string, number, string][] = [
    [`push:pod:${podId}`, perPod, "per pod"],
    [`push:team:${teamId}`, perTeam, "per team"],
  ];
  for (const [key, limit, scope] of caps) {
    const limiter = ctx.env.RATE_LIMITER.get(ctx.env.RATE_LIMITER.idFromName(key));
    const decision = await limiter.hit(limit, windowMs);
    if (!decision.allowed)
      return rateLimited(
        `too many pushes: at most ${limit} per ${windowMs / 60_000} minutes ${scope}; retry in ${decision.retryAfter} s`,
        decision.retryAfter,
      );
  }
  return ok(true);
}

/** The last second a JavaScript Date holds (8.64e15 ms after the epoch). */
const MAX_DATE_S = 8_640_000_000_000;

/** The fields of the git host's `push` event this service reads. */
const PushEvent = z.object({
  ref: z.string().max(1024),
  after: z.string().regex(/^[0-9a-f]{40}$/),
  head_commit: z.object({ message: z.string() }).nullable().optional(),
  repository: z.object({
    clone_url: z.string().max(2048).optional(),
    html_url: z.string().max(2048).optional(),
    /**
     * when the push happened: GitHub's push events carry Unix seconds (an ISO string elsewhere),
     * bounded to what a Date holds (a number beyond is a 400, not a RangeError)
     */
    pushed_at: z
      .union([z.number().min(0).max(MAX_DATE_S), z.string().max(64)])
      .nullable()
      .optional(),
  }),
});

/** `pushed_at` in epoch ms, or undefined when absent or unreadable. */
function pushedAtMs(value: number | string | null | undefined): number | undefined {
  if (typeof value === "number") return value * 1000;
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

const SIGNATURE = /^sha256=[0-9a-f]{64}$/;
/** GitHub's delivery ids are GUIDs; any short id of these characters is taken */
const DELIVERY = /^[A-Za-z0-9._:-]{1,200}$/;
/**
 * The key a push's body is recorded under beside its delivery id: `#` is no delivery id's character,
 * so the two kinds of row never meet in the table.
 */
const BODY_KEY = "body#";
/**
 * How long a delivery id (and its body's hash) is kept: a replay within it is refused by its id or
 * its body, and a push whose signed `repository.pushed_at` is older than it is refused as stale, so
 * a captured delivery can never be replayed (say, to deploy an old commit again) once they are
 * forgotten.
 */
export const DELIVERY_RETENTION_MS = 7 * DAY;

/**
 * `POST /api/webhooks/repohost`: a push from the git host's hook (its `push` payload). The hook's
 * signature (`X-Hub-Signature-256`, HMAC-SHA256 of the body with the repository's secret) selects
 * the configuration among those of the repository, checked in constant time. Its delivery id
 * (`X-GitHub-Delivery`) is required (400 without) and recorded: the same id again is a replay,
 * refused with 409, as is a push older than DELIVERY_RETENTION_MS by its signed `pushed_at`. The
 * delivery id is not signed, so the body's SHA-256 (which the signature covers) is recorded too:
 * the same body under a fresh id is a replay as well (409).
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
    if (!result.success) {
      const path = result.error.issues[0]?.path.join(".");
      return fail("bad_request", `body: not a push event (ref, after, repository)${path ? `: ${path}` : ""}`);
    }
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
  if (!request.delivery || !DELIVERY.test(request.delivery))
    return fail(
      "bad_request",
      "X-GitHub-Delivery: required, the git host's id of this delivery (letters, digits, '-', up to 200)",
    );
  const delivery = request.delivery;
  const pushedAt = pushedAtMs(parsed.repository.pushed_at);
  if (pushedAt !== undefined && Date.now() - pushedAt > DELIVERY_RETENTION_MS)
    return fail(
      "conflict",
      `the push is from ${new Date(pushedAt).toISOString()}, older than the ${DELIVERY_RETENTION_MS / DAY} days a delivery is remembered: a replay is refused`,
    );
  const bodyKey = `${BODY_KEY}${await sha256Hex(request.body)}`;
  const seen = await recordDelivery(ctx, delivery, bodyKey);
  if (seen === "delivery")
    return fail("conflict", `delivery ${delivery} was already received: a replay is refused`);
  if (seen === "body")
    return fail(
      "conflict",
      "this push (the same signed body) was already received under another delivery id: a replay is refused",
    );
  // nothing queued (refused, or failed): the git host's redelivery of this id is not a replay
  const forget = () =>
    ctx.db.delete(gitWebhookDeliveries).where(inArray(gitWebhookDeliveries.id, [delivery, bodyKey]));
  let answer: Result<PushAnswer>;
  try {
    answer = await decidePush(ctx, config, {
      ref: parsed.ref,
      sha: parsed.after,
      message: parsed.head_commit?.message,
    });
  } catch (error) {
    await forget();
    throw error;
  }
  if (!answer.ok) await forget();
  return answer;
}

/**
 * Records a delivery's id and its body's key: "first" when neither was seen within
 * DELIVERY_RETENTION_MS, else which one was (the id first). A refused delivery leaves no row of its
 * own behind. Older rows go on the way.
 */
async function recordDelivery(
  ctx: ServiceContext,
  delivery: string,
  bodyKey: string,
): Promise<"first" | "delivery" | "body"> {
  const now = nowIso();
  const [, inserted] = await ctx.db.batch([
    ctx.db
      .delete(gitWebhookDeliveries)
      .where(lt(gitWebhookDeliveries.receivedAt, new Date(Date.now() - DELIVERY_RETENTION_MS).toISOString())),
    ctx.db
      .insert(gitWebhookDeliveries)
      .values([
        { id: delivery, receivedAt: now },
        { id: bodyKey, receivedAt: now },
      ])
      .onConflictDoNothing()
      .returning({ id: gitWebhookDeliveries.id }),
  ]);
  const ids = inserted.map((r) => r.id);
  if (ids.includes(delivery) && ids.includes(bodyKey)) return "first";
  if (ids.length > 0) await ctx.db.delete(gitWebhookDeliveries).where(inArray(gitWebhookDeliveries.id, ids));
  return ids.includes(delivery) ? "body" : "delivery";
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
