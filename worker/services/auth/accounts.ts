import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { UserRow } from "../../db/schema";
import { users } from "../../db/schema";
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from "../../lib/crypto";
import { DAY, HOUR, nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { resetPasswordMail, verifyEmailMail } from "../mail/templates";
import { isUniqueViolation, withUniqueSlug } from "../teams/slug";
import { personalTeam } from "../teams/teams";
import { issueOneTimeToken, redeemOneTimeToken } from "./one-time-tokens";
import { createSession, endAllSessionsStatement } from "./sessions";

export interface UserView {
  id: string;
  email: string;
  name: string;
  email_verified: boolean;
  active_team_id: string;
  created_at: string;
}

export const toUserView = (
  u: Pick<UserRow, "id" | "email" | "name" | "emailVerifiedAt" | "activeTeamId" | "createdAt">,
): UserView => ({
  id: u.id,
  email: u.email,
  name: u.name,
  email_verified: u.emailVerifiedAt !== null,
  active_team_id: u.activeTeamId,
  created_at: u.createdAt,
});

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

const RESET_TTL = HOUR;
const VERIFY_TTL = 2 * DAY;

export const findUserByEmail = async (ctx: ServiceContext, email: string) =>
  (
    await ctx.db
      .select()
      .from(users)
      .where(eq(users.email, normalizeEmail(email)))
      .limit(1)
  )[0];

export const findUserById = async (ctx: ServiceContext, id: string) =>
  (await ctx.db.select().from(users).where(eq(users.id, id)).limit(1))[0];

export interface Registration {
  email: string;
  password: string;
  name: string;
}

/** A new account with its personal team (owner, active) and a verification mail. */
export async function createAccount(ctx: ServiceContext, input: Registration): Promise<Result<UserRow>> {
  const email = normalizeEmail(input.email);
  if (await findUserByEmail(ctx, email)) return fail("conflict", "an account with this email already exists");

  const now = nowIso();
  const userId = newId("usr");
  const team = personalTeam(ctx, { userId, userName: input.name, now });
  const user: UserRow = {
    id: userId,
    email,
    name: input.name.trim(),
    passwordHash: await hashPassword(input.password),
    emailVerifiedAt: null,
    activeTeamId: team.id,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await withUniqueSlug(ctx.db, team.name, (slug) =>
      ctx.db.batch([ctx.db.insert(users).values(user), ...team.statements(slug)]),
    );
  } catch (error) {
    // Two registrations racing for one email: the unique index decides, the loser gets the 409.
    if (isUniqueViolation(error, "users.email")) {
      return fail("conflict", "an account with this email already exists");
    }
    throw error;
  }
  const token = await issueOneTimeToken(ctx.db, userId, "verify_email", VERIFY_TTL);
  await ctx.mailer.send(verifyEmailMail(email, ctx.env.PUBLIC_URL, token));
  return ok(user);
}

export async function register(ctx: ServiceContext, input: Registration) {
  const created = await createAccount(ctx, input);
  if (!created.ok) return created;
  const session = await createSession(ctx.db, created.value.id);
  return ok({ token: session.token, user: toUserView(created.value) });
}

/** The same answer for an unknown email and a wrong password, after the same amount of work. */
export async function authenticatePassword(
  ctx: ServiceContext,
  email: string,
  password: string,
): Promise<Result<UserRow>> {
  const user = await findUserByEmail(ctx, email);
  const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!user || !valid) return fail("unauthorized", "invalid email or password");
  return ok(user);
}

export async function login(ctx: ServiceContext, input: { email: string; password: string }) {
  const user = await authenticatePassword(ctx, input.email, input.password);
  if (!user.ok) return user;
  const session = await createSession(ctx.db, user.value.id);
  return ok({ token: session.token, user: toUserView(user.value) });
}

/** Always "sent": whether an account exists is not for the caller to learn. */
export async function forgotPassword(ctx: ServiceContext, email: string): Promise<void> {
  const user = await findUserByEmail(ctx, email);
  if (!user) return;
  const token = await issueOneTimeToken(ctx.db, user.id, "reset_password", RESET_TTL);
  await ctx.mailer.send(resetPasswordMail(user.email, ctx.env.PUBLIC_URL, token));
}

/** Sets the new password and ends every session of the user (a reset means the old ones may be someone else's). */
export async function resetPassword(
  ctx: ServiceContext,
  token: string,
  password: string,
): Promise<Result<void>> {
  const userId = await redeemOneTimeToken(ctx.db, token, "reset_password");
  if (!userId) return fail("bad_request", "token: invalid or expired reset token");
  await ctx.db.batch([
    ctx.db
      .update(users)
      .set({ passwordHash: await hashPassword(password), updatedAt: nowIso() })
      .where(eq(users.id, userId)),
    endAllSessionsStatement(ctx.db, userId),
  ]);
  return ok(undefined);
}

export async function verifyEmail(ctx: ServiceContext, token: string): Promise<Result<void>> {
  const userId = await redeemOneTimeToken(ctx.db, token, "verify_email");
  if (!userId) return fail("bad_request", "token: invalid or expired verification token");
  const now = nowIso();
  await ctx.db.update(users).set({ emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId));
  return ok(undefined);
}

/** Mails a fresh verification token; an already verified address gets nothing (the answer is the same). */
export async function resendVerification(ctx: ServiceContext, userId: string): Promise<void> {
  const user = await findUserById(ctx, userId);
  if (!user || user.emailVerifiedAt) return;
  const token = await issueOneTimeToken(ctx.db, user.id, "verify_email", VERIFY_TTL);
  await ctx.mailer.send(verifyEmailMail(user.email, ctx.env.PUBLIC_URL, token));
}
