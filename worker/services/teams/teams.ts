import { and, count, eq, exists, ne, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { pods, type TeamRow, teamMembers, teams, users } from "../../db/schema";
import { createIsolateCache } from "../../lib/isolate-cache";
import { nowIso } from "../../lib/time";
import { toUserView, type UserView } from "../auth/accounts";
import { initialSubscription } from "../billing/subscriptions";
import type { ServiceContext } from "../context";
import { requireMember, requireOwner } from "./access";
import { withUniqueSlug } from "./slug";

export interface TeamView {
  id: string;
  name: string;
  slug: string;
  owner_id: string;
  account_type: "personal" | "team";
  trust_tier: string;
  created_at: string;
  updated_at: string;
  /** the caller's role on the team */
  role: "owner" | "member";
}

export const toTeamView = (t: TeamRow, role: "owner" | "member"): TeamView => ({
  id: t.id,
  name: t.name,
  slug: t.slug,
  owner_id: t.ownerId,
  account_type: t.accountType,
  trust_tier: t.trustTier,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
  role,
});

function teamStatements(ctx: ServiceContext, team: TeamRow) {
  return [
    ctx.db.insert(teams).values(team),
    ctx.db.insert(teamMembers).values({
      id: newId("mem"),
      teamId: team.id,
      userId: team.ownerId,
      role: "owner",
      joinedAt: team.createdAt,
    }),
    // every team has its subscription from the start (docs/billing.md), enforcement on or off
    initialSubscription(ctx, team.id, team.createdAt),
  ] as const;
}

/**
 * The personal team made with every account. Registration writes user and team in one batch, so
 * this hands back the statements for a given slug (see `withUniqueSlug`).
 */
export function personalTeam(ctx: ServiceContext, input: { userId: string; userName: string; now: string }) {
  const id = newId("team");
  const name = `${input.userName.trim()}'s team`;
  const statements = (slug: string) =>
    teamStatements(ctx, {
      id,
      name,
      slug,
      ownerId: input.userId,
      accountType: "personal",
      trustTier: "standard",
      createdAt: input.now,
      updatedAt: input.now,
    });
  return { id, name, statements };
}

const teamLists = createIsolateCache<TeamView[]>();

export async function createTeam(ctx: ServiceContext, userId: string, name: string): Promise<TeamView> {
  const now = nowIso();
  const id = newId("team");
  const team = await withUniqueSlug(ctx.db, name, async (slug) => {
    const row: TeamRow = {
      id,
      name,
      slug,
      ownerId: userId,
      accountType: "team",
      trustTier: "standard",
      createdAt: now,
      updatedAt: now,
    };
    await ctx.db.batch(teamStatements(ctx, row));
    return row;
  });
  return toTeamView(team, "owner");
}

/** The teams of a user, from this isolate's short-lived cache when possible (a hot read). */
export async function listTeams(ctx: ServiceContext, userId: string): Promise<TeamView[]> {
  const cached = teamLists.get(userId);
  if (cached) return cached;
  const rows = await ctx.db
    .select({ team: teams, role: teamMembers.role })
    .from(teamMembers)
    .innerJoin(teams, eq(teams.id, teamMembers.teamId))
    .where(eq(teamMembers.userId, userId))
    .orderBy(teams.createdAt);
  const list = rows.map((r) => toTeamView(r.team, r.role));
  teamLists.set(userId, list);
  return list;
}

export async function getTeam(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
): Promise<Result<TeamView>> {
  const access = await requireMember(ctx.db, teamId, userId);
  return access.ok ? ok(toTeamView(access.value.team, access.value.role)) : access;
}

/**
 * The membership check and the switch are one conditional UPDATE: a switch racing the caller's
 * removal either lands before it (and the removal moves the user off the team again) or finds no
 * membership and changes nothing.
 */
export async function switchTeam(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
): Promise<Result<UserView>> {
  const [user] = await ctx.db
    .update(users)
    .set({ activeTeamId: teamId, updatedAt: nowIso() })
    .where(
      and(
        eq(users.id, userId),
        exists(
          ctx.db
            .select({ one: sql`1` })
            .from(teamMembers)
            .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId))),
        ),
      ),
    )
    .returning();
  return user ? ok(toUserView(user)) : fail("forbidden", "you are not a member of this team");
}

export async function renameTeam(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  name: string,
): Promise<Result<TeamView>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const [team] = await withUniqueSlug(
    ctx.db,
    name,
    (slug) =>
      ctx.db.update(teams).set({ name, slug, updatedAt: nowIso() }).where(eq(teams.id, teamId)).returning(),
    teamId,
  );
  return team ? ok(toTeamView(team, "owner")) : fail("not_found", "team not found");
}

/** Moves users whose active team is `teamId` (and who are not to stay in it) back to their personal team. */
export const resetActiveTeamStatement = (ctx: ServiceContext, teamId: string, onlyUserId?: string) =>
  ctx.db
    .update(users)
    .set({
      activeTeamId: sql`(SELECT ${teams.id} FROM ${teams} WHERE ${teams.ownerId} = ${users.id} AND ${teams.accountType} = 'personal' LIMIT 1)`,
    })
    .where(and(eq(users.activeTeamId, teamId), onlyUserId ? eq(users.id, onlyUserId) : undefined));

export async function deleteTeam(ctx: ServiceContext, userId: string, teamId: string): Promise<Result<void>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  if (access.value.team.accountType === "personal") {
    return fail("conflict", "a personal team cannot be deleted: every account keeps one team");
  }
  const [live] = await ctx.db
    .select({ n: count() })
    .from(pods)
    .where(and(eq(pods.teamId, teamId), ne(pods.status, "deleted")));
  const podCount = live?.n ?? 0;
  if (podCount > 0) {
    // The count is in the message: error bodies carry only the fields the spec names.
    return fail("conflict", `team still owns ${podCount} pod${podCount === 1 ? "" : "s"}: delete them first`);
  }
  // Members, invitations and API tokens go with the team (ON DELETE CASCADE).
  await ctx.db.batch([
    resetActiveTeamStatement(ctx, teamId),
    ctx.db.delete(teams).where(eq(teams.id, teamId)),
  ]);
  return ok(undefined);
}
