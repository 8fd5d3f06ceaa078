import { and, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { type TeamMemberRow, teamMembers, users } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { findUserByEmail } from "../auth/accounts";
import type { ServiceContext } from "../context";
import { finishKeyRemovals, requestKeyRemovalsStatement } from "../ssh/key-records";
import { requireMember, requireOwner } from "./access";
import { resetActiveTeamStatement } from "./teams";

export interface MemberView {
  id: string;
  team_id: string;
  user_id: string;
  role: "owner" | "member";
  joined_at: string;
}

export const toMemberView = (m: TeamMemberRow): MemberView => ({
  id: m.id,
  team_id: m.teamId,
  user_id: m.userId,
  role: m.role,
  joined_at: m.joinedAt,
});

export async function listMembers(ctx: ServiceContext, userId: string, teamId: string) {
  const access = await requireMember(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const rows = await ctx.db
    .select({ member: teamMembers, name: users.name, email: users.email })
    .from(teamMembers)
    .innerJoin(users, eq(users.id, teamMembers.userId))
    .where(eq(teamMembers.teamId, teamId))
    .orderBy(teamMembers.joinedAt);
  return ok(rows);
}

export async function addMember(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  input: { email: string; role: "member" },
): Promise<Result<MemberView>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const user = await findUserByEmail(ctx, input.email);
  if (!user) return fail("not_found", "no account with this email");
  return joinTeam(ctx, teamId, user.id, input.role);
}

/** Adds the membership, or 409 when it exists (the unique index settles concurrent joins). */
export async function joinTeam(
  ctx: ServiceContext,
  teamId: string,
  userId: string,
  role: "member",
): Promise<Result<MemberView>> {
  const [row] = await ctx.db
    .insert(teamMembers)
    .values({ id: newId("mem"), teamId, userId, role, joinedAt: nowIso() })
    .onConflictDoNothing()
    .returning();
  return row ? ok(toMemberView(row)) : fail("conflict", "this user is already a member of the team");
}

export async function removeMember(
  ctx: ServiceContext,
  callerId: string,
  teamId: string,
  targetUserId: string,
): Promise<Result<void>> {
  const access = await requireMember(ctx.db, teamId, callerId);
  if (!access.ok) return access;
  const { team, role } = access.value;
  if (targetUserId === team.ownerId) return fail("forbidden", "the team owner cannot be removed");
  if (role !== "owner" && targetUserId !== callerId) {
    return fail("forbidden", "only the team owner can remove other members");
  }
  // One batch: the membership, the active team and the marking of the keys they put into the team's
  // pods go together (a switch cannot land in between, and no key is forgotten).
  const [removed] = await ctx.db.batch([
    ctx.db
      .delete(teamMembers)
      .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, targetUserId)))
      .returning({ id: teamMembers.id }),
    resetActiveTeamStatement(ctx, teamId, targetUserId),
    requestKeyRemovalsStatement(ctx.db, teamId, targetUserId),
  ]);
  if (removed.length === 0) return fail("not_found", "this user is not a member of the team");
  // Their keys come out of the team's pods now; a pod whose host is unreachable is left to the
  // hourly cron (services/ssh/key-records.ts).
  await finishKeyRemovals(ctx, { userId: targetUserId });
  return ok(undefined);
}
