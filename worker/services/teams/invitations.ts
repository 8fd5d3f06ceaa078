import { and, eq, gt } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { type InvitationRow, invitations, teamMembers, teams, users } from "../../db/schema";
import { DAY, isoIn, nowIso } from "../../lib/time";
import { authenticatePassword, createAccount, findUserByEmail, normalizeEmail } from "../auth/accounts";
import { createSession } from "../auth/sessions";
import type { ServiceContext } from "../context";
import { invitationMail } from "../mail/templates";
import { requireOwner } from "./access";
import { joinTeam } from "./members";

export const INVITATION_TTL = 7 * DAY;

export interface InvitationView {
  id: string;
  team_id: string;
  email: string;
  role: "owner" | "member";
  token: string;
  invited_by: string;
  expires_at: string;
  created_at: string;
}

export const toInvitationView = (i: InvitationRow): InvitationView => ({
  id: i.id,
  team_id: i.teamId,
  email: i.email,
  role: i.role,
  token: i.token,
  invited_by: i.invitedBy,
  expires_at: i.expiresAt,
  created_at: i.createdAt,
});

export async function listInvitations(ctx: ServiceContext, userId: string, teamId: string) {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const rows = await ctx.db
    .select()
    .from(invitations)
    .where(and(eq(invitations.teamId, teamId), gt(invitations.expiresAt, nowIso())))
    .orderBy(invitations.createdAt);
  return ok(rows.map(toInvitationView));
}

export async function createInvitation(
  ctx: ServiceContext,
  inviter: { id: string; name: string },
  teamId: string,
  input: { email: string; role: "member" },
): Promise<Result<InvitationView>> {
  const access = await requireOwner(ctx.db, teamId, inviter.id);
  if (!access.ok) return access;
  const email = normalizeEmail(input.email);
  const existing = await findUserByEmail(ctx, email);
  if (existing) {
    const [member] = await ctx.db
      .select({ id: teamMembers.id })
      .from(teamMembers)
      .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, existing.id)))
      .limit(1);
    if (member) return fail("conflict", "this user is already a member of the team");
  }
  const invitation: InvitationRow = {
    id: newId("inv"),
    teamId,
    email,
    role: input.role,
    token: randomToken(32),
    invitedBy: inviter.id,
    expiresAt: isoIn(INVITATION_TTL),
    createdAt: nowIso(),
  };
  // A fresh invitation to the same address replaces the pending one: one live link per person.
  await ctx.db.batch([
    ctx.db.delete(invitations).where(and(eq(invitations.teamId, teamId), eq(invitations.email, email))),
    ctx.db.insert(invitations).values(invitation),
  ]);
  await ctx.mailer.send(
    invitationMail(email, ctx.env.PUBLIC_URL, invitation.token, access.value.team.name, inviter.name),
  );
  return ok(toInvitationView(invitation));
}

export async function deleteInvitation(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  invitationId: string,
): Promise<Result<void>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const [gone] = await ctx.db
    .delete(invitations)
    .where(and(eq(invitations.id, invitationId), eq(invitations.teamId, teamId)))
    .returning({ id: invitations.id });
  return gone ? ok(undefined) : fail("not_found", "invitation not found");
}

async function findLiveInvitation(ctx: ServiceContext, token: string) {
  const [row] = await ctx.db
    .select({ invitation: invitations, teamName: teams.name, inviterName: users.name })
    .from(invitations)
    .innerJoin(teams, eq(teams.id, invitations.teamId))
    .innerJoin(users, eq(users.id, invitations.invitedBy))
    .where(and(eq(invitations.token, token), gt(invitations.expiresAt, nowIso())))
    .limit(1);
  return row;
}

export async function describeInvitation(ctx: ServiceContext, token: string) {
  const row = await findLiveInvitation(ctx, token);
  if (!row) return fail("not_found", "invitation not found or expired");
  return ok({
    team_name: row.teamName,
    inviter_name: row.inviterName,
    email: row.invitation.email,
    role: row.invitation.role,
    expires_at: row.invitation.expiresAt,
  });
}

export interface AcceptResult {
  status: "joined" | "already_member";
  team_id: string;
  /** a new session when the invitation was accepted signed out */
  session?: { token: string };
}

/** Joins the invitation's team and makes it the user's active team; the invitation is used up. */
async function acceptAs(
  ctx: ServiceContext,
  userId: string,
  invitation: InvitationRow,
): Promise<AcceptResult> {
  const joined = await joinTeam(ctx, invitation.teamId, userId, "member");
  await ctx.db.batch([
    ctx.db.delete(invitations).where(eq(invitations.id, invitation.id)),
    ctx.db
      .update(users)
      .set({ activeTeamId: invitation.teamId, updatedAt: nowIso() })
      .where(eq(users.id, userId)),
  ]);
  return { status: joined.ok ? "joined" : "already_member", team_id: invitation.teamId };
}

export async function acceptInvitationSignedIn(ctx: ServiceContext, userId: string, token: string) {
  const row = await findLiveInvitation(ctx, token);
  if (!row) return fail("not_found", "invitation not found or expired");
  return ok(await acceptAs(ctx, userId, row.invitation));
}

/**
 * Signed out: registers an account with the given details (or signs in when the email already has
 * one and the password matches), opens a session and joins.
 */
export async function acceptInvitationSignedOut(
  ctx: ServiceContext,
  input: { token: string; email: string; name: string; password: string },
): Promise<Result<AcceptResult>> {
  const row = await findLiveInvitation(ctx, input.token);
  if (!row) return fail("not_found", "invitation not found or expired");
  const existing = await findUserByEmail(ctx, input.email);
  const user = existing
    ? await authenticatePassword(ctx, input.email, input.password)
    : await createAccount(ctx, { email: input.email, name: input.name, password: input.password });
  if (!user.ok) return user;
  const result = await acceptAs(ctx, user.value.id, row.invitation);
  const session = await createSession(ctx.db, user.value.id);
  return ok({ ...result, session: { token: session.token } });
}
