import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError, unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import { beginPasswordAttempt, rateLimit } from "../../http/rate-limit";
import { attributeSignupFromCookie } from "../../http/referral-cookie";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { clearSessionCookie, setSessionCookie } from "../../http/session-cookie";
import {
  forgotPassword,
  login,
  register,
  resendVerification,
  resetPassword,
  verifyEmail,
} from "../../services/auth/accounts";
import { endSession } from "../../services/auth/sessions";
import { AuthResult, Email, LoginRequest, Password, RegisterRequest, TokenRequest, User } from "./schemas";

const tags = ["Authentication"];

export const authRouter = createRouter()
  .openapi(
    createRoute({
      operationId: "register",
      security: [],
      method: "post",
      path: "/register",
      tags,
      summary: "Create an account (with a personal team) and sign in",
      middleware: [jsonBodyLimit, rateLimit("register")],
      request: { body: jsonBody(RegisterRequest) },
      responses: {
        201: jsonResponse(
          AuthResult,
          "Signed in; the `pod_session` cookie is set (and `__Host-pod_session` where the API is https)",
        ),
        ...errors(400, 409, 429),
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const result = unwrap(await register(ctx, c.req.valid("json")));
      const { user } = result;
      await attributeSignupFromCookie(c, ctx, {
        userId: user.id,
        teamId: user.active_team_id,
        email: user.email,
      });
      setSessionCookie(c, result.token);
      return c.json(result, 201);
    },
  )
  .openapi(
    createRoute({
      operationId: "login",
      security: [],
      method: "post",
      path: "/login",
      tags,
      summary:
        "Sign in with email and password. Limited per IP and per account: after 10 failures on one account it is locked for 1 minute, doubling per further failure up to 15 minutes (429 with Retry-After); a success resets.",
      middleware: [jsonBodyLimit, rateLimit("login")],
      request: { body: jsonBody(LoginRequest) },
      responses: {
        200: jsonResponse(
          AuthResult,
          "Signed in; the `pod_session` cookie is set (and `__Host-pod_session` where the API is https)",
        ),
        ...errors(400, 401, 429),
      },
    }),
    async (c) => {
      const input = c.req.valid("json");
      const attempt = await beginPasswordAttempt(c, input.email);
      const result = unwrap(await login(serviceContext(c), input));
      await attempt.succeeded();
      setSessionCookie(c, result.token);
      return c.json(result, 200);
    },
  )
  .openapi(
    createRoute({
      operationId: "logout",
      method: "post",
      path: "/logout",
      tags,
      summary: "End the session that made the call",
      security: authenticated,
      middleware: [jsonBodyLimit, requireAuth],
      responses: { 200: jsonResponse(StatusBody("logged_out"), "Session ended"), ...errors(400, 401) },
    }),
    async (c) => {
      const { sessionId, connectorId } = c.get("caller");
      if (connectorId) {
        throw new ApiError(
          "bad_request",
          "a connector session is an OAuth grant, not a login: revoke it with DELETE /api/connectors/{id}",
        );
      }
      if (!sessionId) {
        throw new ApiError(
          "bad_request",
          "an API token is not a session: revoke it with DELETE /api/api-tokens/{id}",
        );
      }
      await endSession(c.get("db"), sessionId);
      clearSessionCookie(c);
      return c.json({ status: "logged_out" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      operationId: "getCurrentUser",
      method: "get",
      path: "/user",
      tags,
      summary: "The signed-in user",
      security: authenticated,
      middleware: [jsonBodyLimit, requireAuth],
      responses: { 200: jsonResponse(User, "The user"), ...errors(401) },
    }),
    (c) => c.json(c.get("caller").user, 200),
  )
  .openapi(
    createRoute({
      operationId: "forgotPassword",
      security: [],
      method: "post",
      path: "/forgot-password",
      tags,
      summary: "Mail a password reset token (answers the same whether or not the account exists)",
      middleware: [jsonBodyLimit, rateLimit("forgotPassword")],
      request: { body: jsonBody(z.object({ email: Email })) },
      responses: { 200: jsonResponse(StatusBody("sent"), "Accepted"), ...errors(400, 429) },
    }),
    async (c) => {
      await forgotPassword(serviceContext(c), c.req.valid("json").email);
      return c.json({ status: "sent" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      operationId: "resetPassword",
      security: [],
      middleware: [jsonBodyLimit],
      method: "post",
      path: "/reset-password",
      tags,
      summary: "Set a new password with a reset token (single use, 1 hour); ends every session",
      request: { body: jsonBody(TokenRequest.extend({ password: Password })) },
      responses: { 200: jsonResponse(StatusBody("password_reset"), "Password changed"), ...errors(400) },
    }),
    async (c) => {
      const { token, password } = c.req.valid("json");
      unwrap(await resetPassword(serviceContext(c), token, password));
      return c.json({ status: "password_reset" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      operationId: "verifyEmail",
      security: [],
      middleware: [jsonBodyLimit],
      method: "post",
      path: "/verify-email",
      tags,
      summary: "Confirm the email address with the mailed token",
      request: { body: jsonBody(TokenRequest) },
      responses: { 200: jsonResponse(StatusBody("verified"), "Verified"), ...errors(400) },
    }),
    async (c) => {
      unwrap(await verifyEmail(serviceContext(c), c.req.valid("json").token));
      return c.json({ status: "verified" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      operationId: "resendVerification",
      method: "post",
      path: "/resend-verification",
      tags,
      summary:
        "Mail a new verification token (nothing is mailed when the address is already verified); 403 to an API token or connector session",
      security: authenticated,
      middleware: [jsonBodyLimit, requireAuth, accountWide("mailing the account")],
      responses: { 200: jsonResponse(StatusBody("sent"), "Sent"), ...errors(401, 403) },
    }),
    async (c) => {
      await resendVerification(serviceContext(c), c.get("caller").user.id);
      return c.json({ status: "sent" as const }, 200);
    },
  );
