import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { attributeSignup, REFERRAL_WINDOW_MS } from "../services/affiliates/attribution";
import type { ServiceContext } from "../services/context";
import type { AppEnv } from "./app-env";
import { signedInUserId } from "./signed-in-user";

/** Set by POST /api/affiliate/visit, read (and cleared) at registration (docs/affiliates.md). */
export const REFERRAL_COOKIE = "pod_ref";

/** HttpOnly (no script reads it), SameSite=Lax, 30 days; Secure except on a plain-http localhost. */
export function setReferralCookie(c: Context<AppEnv>, visitId: string) {
  const base = new URL(c.env.PUBLIC_URL);
  const local = base.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(base.hostname);
  setCookie(c, REFERRAL_COOKIE, visitId, {
    httpOnly: true,
    sameSite: "Lax",
    secure: !local,
    path: "/",
    maxAge: REFERRAL_WINDOW_MS / 1000,
  });
}

export const referralCookie = (c: Context<AppEnv>) => getCookie(c, REFERRAL_COOKIE);

export const clearReferralCookie = (c: Context<AppEnv>) => deleteCookie(c, REFERRAL_COOKIE, { path: "/" });

/**
 * An account this request just made (registration, or an invitation accepted signed out): a
 * `pending` referral when the browser carries an affiliate's cookie. `teamId` is the account's
 * personal team, whose invoices are the ones that earn. The cookie is spent either way.
 */
export async function attributeSignupFromCookie(
  c: Context<AppEnv>,
  ctx: ServiceContext,
  account: { userId: string; teamId: string; email: string },
) {
  const visitId = referralCookie(c);
  if (!visitId) return;
  await attributeSignup({
    ctx,
    input: { visitId, ...account, signedInUserId: await signedInUserId(c) },
  });
  clearReferralCookie(c);
}
