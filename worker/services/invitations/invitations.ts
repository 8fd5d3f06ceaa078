import { and, eq, gt, isNull } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { type InvitationRow, invitations, teamMembers, teams, users } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { secretBox } from "../../lib/secret-box";
import { DAY, isoIn, nowIso } from "../../lib/time";
import { authenticatePassword, createAccount, findUserByEmail, normalizeEmail } from "../auth/accounts";
import { createSession } from "../auth/sessions";
import type { ServiceContext } from "../context";
import { invitationMail } from "../mail/templates";
import { requireMember, requireOwner } from "../teams/access";
import { joinTeam } from "../teams/members";

export const INVITATION_TTL = 7 * DAY;

export interface InvitationView {
  id: string;
  team_id: string;
  email: string;
  role: "owner" | "member";
  /**
   * the link's token: in the creation answer, and in the owner's list while it is kept sealed (null
   * for an invitation made before tokens were kept, or while INVITATION_TOKEN_KEY is not set)
   */
  token: string | null;
  invited_by: string;
  expires_at: string;
  created_at: string;
}

export const toInvitationView = (i: InvitationRow, token: string | null): InvitationView => ({
  id: i.id,
  team_id: i.teamId,
  email: i.email,
  role: i.role,
  token,
  invited_by: i.invitedBy,
  expires_at: i.expiresAt,
  created_at: i.createdAt,
});

/** Pending: neither expired nor accepted. */
const pending = () => and(gt(invitations.expiresAt, nowIso()), isNull(invitations.acceptedBy));

const usedOrExpired = () => fail("not_found", "invitation not found, expired or already used");

/**
 * Invitation tokens are looked up by their SHA-256 (`token_hash`) and kept sealed for the owner's
 * list (`token_sealed`, INVITATION_TOKEN_KEY, bound to the invitation's id): a reader of D1 learns no
 * link, and the owner can copy a pending link again, as the spec's Invitation record has it.
 */
const tokens = (ctx: ServiceContext) => secretBox(ctx.env, "invitation-token");

/** The sealed token opened, or null: none kept, no key, or one that does not open (logged). */
async function tokenOf(ctx: ServiceContext, row: InvitationRow): Promise<string | null> {
  if (!row.tokenSealed) return null;
  const opened = await tokens(ctx).open(row.id, row.tokenSealed);
  if (opened.ok) return opened.value;
  console.warn(
    JSON.stringify({ msg: "invitation token not opened", invitationId: row.id, error: opened.message }),
  );
  return null;
}

/** Pending invitations: neither expired nor used, each with its token (see tokenOf). */
export async function listInvitations(ctx: ServiceContext, userId: string, teamId: string) {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  const rows = await ctx.db
    .select()
    .from(invitations)
    .where(and(eq(invitations.teamId, teamId), pending()))
    .orderBy(invitations.createdAt);
  return ok(await Promise.all(rows.map(async (row) => toInvitationView(row, await tokenOf(ctx, row)))));
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
  const token = randomToken(32);
  const id = newId("inv");
  // Without the key the invitation works as before; only the owner's list cannot show its link.
  const sealed = ctx.env.INVITATION_TOKEN_KEY ? await tokens(ctx).seal(id, token) : undefined;
  if (sealed && !sealed.ok) return sealed;
  const invitation: InvitationRow = {
    id,
    teamId,
    email,
    role: input.role,
    tokenHash: await sha256Hex(token),
    tokenSealed: sealed?.value ?? null,
    invitedBy: inviter.id,
    expiresAt: isoIn(INVITATION_TTL),
    createdAt: nowIso(),
    acceptedBy: null,
    acceptedAt: null,
  };
  // A fresh invitation to the same address replaces the pending one: one live link per person.
  await ctx.db.batch([
    ctx.db
      .delete(invitations)
      .where(
        and(eq(invitations.teamId, teamId), eq(invitations.email, email), isNull(invitations.acceptedBy)),
      ),
    ctx.db.insert(invitations).values(invitation),
  ]);
  await ctx.mailer.send(
    invitationMail(email, ctx.env.PUBLIC_URL, token, access.value.team.name, inviter.name),
  );
  return ok(toInvitationView(invitation, token));
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
    .where(and(eq(invitations.tokenHash, await sha256Hex(token)), gt(invitations.expiresAt, nowIso())))
    .limit(1);
  return row;
}

export async function describeInvitation(ctx: ServiceContext, token: string) {
  const row = await findLiveInvitation(ctx, token);
  if (!row || row.invitation.acceptedBy) return usedOrExpired();
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
  /** the account made by a signed-out accept (its personal team is what a referral counts) */
  registered?: { userId: string; teamId: string; email: string };
}

const makeActive = (ctx: ServiceContext, userId: string, teamId: string) =>
  ctx.db.update(users).set({ activeTeamId: teamId, updatedAt: nowIso() }).where(eq(users.id, userId));

/**
 * Joins the invitation's team and makes it the user's active team. The invitation is claimed by a
 * conditional UPDATE, so it admits exactly one account even under concurrent acceptance; a member
 * opening the link only gets the team made active, and does not use it up.
 */
async function acceptAs(
  ctx: ServiceContext,
  userId: string,
  invitation: InvitationRow,
): Promise<Result<AcceptResult>> {
  const team_id = invitation.teamId;
  if ((await requireMember(ctx.db, team_id, userId)).ok) {
    await makeActive(ctx, userId, team_id);
    return ok({ status: "already_member", team_id });
  }
  const [claimed] = await ctx.db
    .update(invitations)
    .set({ acceptedBy: userId, acceptedAt: nowIso() })
    .where(and(eq(invitations.id, invitation.id), pending()))
    .returning({ id: invitations.id });
  if (!claimed) return usedOrExpired();
  const joined = await joinTeam(ctx, team_id, userId, "member");
  await makeActive(ctx, userId, team_id);
  return ok({ status: joined.ok ? "joined" : "already_member", team_id });
}

export async function acceptInvitationSignedIn(
  ctx: ServiceContext,
  user: { id: string; email: string },
  token: string,
): Promise<Result<AcceptResult>> {
  const row = await findLiveInvitation(ctx, token);
  if (!row) return usedOrExpired();
  return acceptAs(ctx, user.id, row.invitation);
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
  if (!row) return usedOrExpired();
  const existing = await findUserByEmail(ctx, input.email);
  // Checked before registering, so a used link does not leave an account behind.
  if (!existing && row.invitation.acceptedBy) return usedOrExpired();
  const user = existing
    ? await authenticatePassword(ctx, input.email, input.password)
    : await createAccount(ctx, { email: input.email, name: input.name, password: input.password });
  if (!user.ok) return user;
  const result = await acceptAs(ctx, user.value.id, row.invitation);
  if (!result.ok) return result;
  const session = await createSession(ctx.db, user.value.id);
  const registered = existing
    ? undefined
    : { userId: user.value.id, teamId: user.value.activeTeamId, email: user.value.email };
  return ok({ ...result.value, session: { token: session.token }, registered });
}
