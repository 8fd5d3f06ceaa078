import { and, desc, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { type AlertChannelKind, alertChannels, alertDeliveries } from "../../db/schema";
import { secretBox } from "../../lib/secret-box";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { requireOwner } from "../teams/access";
import { dispatchDelivery, testPayload } from "./raise";
import { checkChannelUrl } from "./target";
import { type TeamRole, toChannelView, toDeliveryView } from "./views";

/** A team's alert channels (docs/alerts.md); every verb is the owner's (members 403, strangers 404). */

const MAX_CHANNELS = 20;

export interface ChannelInput {
  kind: AlertChannelKind;
  name: string;
  url?: string;
  roles?: TeamRole[];
}

export interface ChannelChange {
  name?: string;
  url?: string;
  roles?: TeamRole[];
  enabled?: boolean;
}

const newSecret = () => `whsec_${randomToken(40)}`;

async function ownedChannel(ctx: ServiceContext, userId: string, teamId: string, channelId: string) {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const [row] = await ctx.db
    .select()
    .from(alertChannels)
    .where(and(eq(alertChannels.id, channelId), eq(alertChannels.teamId, teamId)));
  return row ? ok({ row, team: access.value.team }) : fail("not_found", `channel ${channelId} not found`);
}

export async function listChannels(ctx: ServiceContext, userId: string, teamId: string) {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const rows = await ctx.db
    .select()
    .from(alertChannels)
    .where(eq(alertChannels.teamId, teamId))
    .orderBy(alertChannels.createdAt);
  return ok(rows.map(toChannelView));
}

/** A webhook channel's answer carries its signing secret, this once. */
export async function createChannel(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  input: ChannelInput,
) {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const count = await ctx.db.$count(alertChannels, eq(alertChannels.teamId, teamId));
  if (count >= MAX_CHANNELS) return fail("conflict", `a team has at most ${MAX_CHANNELS} alert channels`);
  const id = newId("alc");
  let url: string | null = null;
  let roles: string | null = null;
  let secret: string | null = null;
  let secretSealed: string | null = null;
  if (input.kind === "email") {
    if (input.url !== undefined) return fail("bad_request", "url: an email channel has no url");
    roles = JSON.stringify(input.roles && input.roles.length > 0 ? input.roles : ["owner"]);
  } else {
    if (input.roles !== undefined) return fail("bad_request", `roles: only an email channel has roles`);
    if (!input.url) return fail("bad_request", `url: a ${input.kind} channel needs one`);
    const checked = await checkChannelUrl(ctx.env, input.url);
    if (!checked.ok) return checked;
    url = checked.value.href;
    if (input.kind === "webhook") {
      secret = newSecret();
      const sealed = await secretBox(ctx.env, "alert-webhook-secret").seal(id, secret);
      if (!sealed.ok) return sealed;
      secretSealed = sealed.value;
    }
  }
  const now = nowIso();
  const row = {
    id,
    teamId,
    kind: input.kind,
    name: input.name,
    url,
    roles,
    secretSealed,
    enabled: true,
    createdAt: now,
    updatedAt: now,
  };
  await ctx.db.insert(alertChannels).values(row);
  return ok({ ...toChannelView(row), ...(secret ? { secret } : {}) });
}

export async function updateChannel(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  channelId: string,
  change: ChannelChange,
) {
  const found = await ownedChannel(ctx, userId, teamId, channelId);
  if (!found.ok) return found;
  const { row } = found.value;
  const set: Partial<typeof alertChannels.$inferInsert> = { updatedAt: nowIso() };
  if (change.name !== undefined) set.name = change.name;
  if (change.enabled !== undefined) set.enabled = change.enabled;
  if (change.roles !== undefined) {
    if (row.kind !== "email") return fail("bad_request", "roles: only an email channel has roles");
    if (change.roles.length === 0) return fail("bad_request", "roles: at least one role");
    set.roles = JSON.stringify(change.roles);
  }
  if (change.url !== undefined) {
    if (row.kind === "email") return fail("bad_request", "url: an email channel has no url");
    const checked = await checkChannelUrl(ctx.env, change.url);
    if (!checked.ok) return checked;
    set.url = checked.value.href;
  }
  const [updated] = await ctx.db
    .update(alertChannels)
    .set(set)
    .where(and(eq(alertChannels.id, channelId), eq(alertChannels.teamId, teamId)))
    .returning();
  return updated ? ok(toChannelView(updated)) : fail("not_found", `channel ${channelId} not found`);
}

export async function deleteChannel(ctx: ServiceContext, userId: string, teamId: string, channelId: string) {
  const found = await ownedChannel(ctx, userId, teamId, channelId);
  if (!found.ok) return found;
  await ctx.db
    .delete(alertChannels)
    .where(and(eq(alertChannels.id, channelId), eq(alertChannels.teamId, teamId)));
  return ok({ status: "deleted" as const });
}

/** A `test` delivery to one channel, through the same path (signature, retries) as a real alert. */
export async function testChannel(ctx: ServiceContext, userId: string, teamId: string, channelId: string) {
  const found = await ownedChannel(ctx, userId, teamId, channelId);
  if (!found.ok) return found;
  const { row, team } = found.value;
  const id = newId("ald");
  const payload = testPayload(ctx.env, id, team);
  const delivery = {
    id,
    teamId,
    channelId: row.id,
    incidentId: null,
    event: "test",
    state: "test" as const,
    payload: JSON.stringify(payload),
    status: "pending" as const,
    attempts: 0,
    createdAt: payload.created_at,
  };
  await ctx.db.insert(alertDeliveries).values(delivery);
  await dispatchDelivery(ctx.env, id);
  return ok(toDeliveryView({ ...delivery, statusCode: null, lastError: null, deliveredAt: null }));
}

export const DELIVERY_PAGE_MAX = 200;

export async function listDeliveries(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  query: { channelId?: string; limit: number },
): Promise<Result<ReturnType<typeof toDeliveryView>[]>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const rows = await ctx.db
    .select()
    .from(alertDeliveries)
    .where(
      and(
        eq(alertDeliveries.teamId, teamId),
        query.channelId ? eq(alertDeliveries.channelId, query.channelId) : undefined,
      ),
    )
    .orderBy(desc(alertDeliveries.createdAt), desc(alertDeliveries.id))
    .limit(Math.min(query.limit, DELIVERY_PAGE_MAX));
  return ok(rows.map(toDeliveryView));
}
