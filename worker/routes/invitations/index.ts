import { createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env";
import { auditDirectly } from "../../http/audit-trail";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError, unwrap } from "../../http/errors";
import { isTeamBound, optionalAuth, teamBoundRefusal } from "../../http/middleware";
import { beginPasswordAttempt, enforceRateLimit } from "../../http/rate-limit";
import { attributeSignupFromCookie } from "../../http/referral-cookie";
import {
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  optionallyAuthenticated,
  serviceContext,
} from "../../http/router";
import { setSessionCookie } from "../../http/session-cookie";
import type { Caller } from "../../services/auth/caller";
import { resolveCredential } from "../../services/auth/credentials";
import {
  acceptInvitationSignedIn,
  acceptInvitationSignedOut,
  describeInvitation,
} from "../../services/invitations/invitations";
import { Email, Password, PersonName } from "../auth/schemas";

const tags = ["Invitations"];

const InvitationSummary = z
  .object({
    team_name: z.string(),
    inviter_name: z.string(),
    email: z.string(),
    role: z.enum(["owner", "member"]),
    expires_at: z.string(),
  })
  .openapi("InvitationSummary");

/** Signed in only `token` is needed; signed out all four are, and a missing one is 401 (no credentials). */
const AcceptRequest = z.object({
  token: z.string().max(200).optional(),
  email: Email.optional(),
  name: PersonName.optional(),
  password: Password.optional(),
});

const AcceptResult = z.object({ status: z.enum(["joined", "already_member"]), team_id: z.string() });

export const invitationsRouter = createRouter()
  .openapi(
    createRoute({
      operationId: "getInvitation",
      security: [],
      middleware: [jsonBodyLimit],
      method: "get",
      path: "/{token}",
      tags,
      summary: "What an invitation is for (public)",
      request: { params: z.object({ token: z.string().max(200) }) },
      responses: { 200: jsonResponse(InvitationSummary, "The invitation"), ...errors(404) },
    }),
    async (c) => c.json(unwrap(await describeInvitation(serviceContext(c), c.req.valid("param").token)), 200),
  )
  .openapi(
    createRoute({
      operationId: "acceptInvitation",
      security: optionallyAuthenticated,
      method: "post",
      path: "/accept",
      tags,
      summary:
        "Accept an invitation. Signed in: `{token}`. Signed out: `{token, email, name, password}` registers (or signs in), sets the session cookie and joins, and counts against the login rate limit. The team becomes active. An API token or connector session cannot accept (403): it acts on its own team only.",
      middleware: [jsonBodyLimit, optionalAuth],
      request: { body: jsonBody(AcceptRequest) },
      responses: { 200: jsonResponse(AcceptResult, "Joined"), ...errors(400, 401, 403, 404, 409, 429) },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const caller = (c.var as Partial<AppEnv["Variables"]>).caller as Caller | undefined;
      const ctx = serviceContext(c);
      if (caller) {
        // A credential bound to one team must not reach another (boundTeamOnly): joining one is the
        // account's decision, made signed in, not a leaked CI token's or an assistant's.
        if (isTeamBound(caller)) throw teamBoundRefusal(caller, "accepting an invitation");
        if (!body.token) throw new ApiError("bad_request", "token: is required");
        const { status, team_id } = unwrap(await acceptInvitationSignedIn(ctx, caller.user, body.token));
        return c.json({ status, team_id }, 200);
      }
      const { token, email, name, password } = body;
      if (!token || !email || !name || !password) {
        throw new ApiError(
          "unauthorized",
          "sign in first, or send token, email, name and password to create an account",
        );
      }
      // Signed out, this is a sign-in (or sign-up) with a password: without the login limit, any
      // invitation token would make it a way around the limit for guessing an account's password.
      await enforceRateLimit(c, "login");
      const attempt = await beginPasswordAttempt(c, email);
      const result = unwrap(await acceptInvitationSignedOut(ctx, { token, email, name, password }));
      await attempt.succeeded();
      if (result.registered) await attributeSignupFromCookie(c, ctx, result.registered);
      if (result.session) {
        setSessionCookie(c, result.session.token);
        // The audit trail records signed-in callers: here the caller is only known now, as the
        // session just made. A failed signed-out attempt names nobody (the login limit covers it).
        const joined = await resolveCredential(c.get("db"), c.env, result.session.token);
        if (joined) auditDirectly(c, { ...joined.caller, teamId: result.team_id }, "invitation.accept", 200);
      }
      return c.json({ status: result.status, team_id: result.team_id }, 200);
    },
  );
