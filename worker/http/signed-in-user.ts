import type { Context } from "hono";
import { resolveCredential } from "../services/auth/credentials";
import type { AppEnv } from "./app-env";
import { sessionCookie } from "./session-cookie";

/**
 * The account behind the request's credential, if any, for public routes that only use it to
 * *withhold* something (the affiliate's own click is not counted, their own browser refers no
 * one). No cross-site check and no 401: a forged request can at most get a click ignored.
 */
export async function signedInUserId(c: Context<AppEnv>): Promise<string | undefined> {
  const header = c.req.header("authorization");
  const token = header ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : sessionCookie(c);
  if (!token) return undefined;
  return (await resolveCredential(c.get("db"), c.env, token))?.caller.user.id;
}
