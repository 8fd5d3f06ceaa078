import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { Hono } from "hono";
import { teams } from "../../db/schema";
import type { AppEnv } from "../../http/app-env";
import { auditDirectly } from "../../http/audit-trail";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError } from "../../http/errors";
import { crossSiteRefusal } from "../../http/middleware";
import { enforceRateLimit } from "../../http/rate-limit";
import {
  DEVICE_PATHS,
  decideDevice,
  displayUserCode,
  findPendingDevice,
  normalizeUserCode,
  startDeviceAuthorization,
} from "../../services/connectors/device";
import { resourceOf } from "../../services/connectors/oauth";
import { cookieSession, page, signIn } from "./oauth";
import { deviceCodePage, deviceConsentPage, deviceDonePage, errorPage, signInPage } from "./pages";

type Ctx = Context<AppEnv>;

/**
 * The device login (RFC 8628; docs/connectors.md#device-login): `POST /oauth/device_authorization`
 * gives a device its codes; `/device` is the page where a signed-in user types the code and allows
 * it. The token grant itself is answered at /oauth/token (oauth.ts).
 */

/** RFC 8628 §3.1: a form with the client's id; limited per IP (each answer stores a row). */
async function deviceAuthorization(c: Ctx) {
  const issuer = resourceOf(c.env);
  if (new URL(c.req.url).origin !== issuer)
    return c.json({ error: `not found: the OAuth endpoints answer at ${issuer} (PUBLIC_URL's origin)` }, 404);
  await enforceRateLimit(c, "deviceAuthorization");
  const form = await c.req.formData().catch(() => undefined);
  const clientId = form?.get("client_id");
  const answer = await startDeviceAuthorization(
    c.env,
    c.get("db"),
    typeof clientId === "string" ? clientId : "",
  );
  const headers = { "Cache-Control": "no-store" };
  if ("error" in answer)
    return c.json(
      { error: answer.error, error_description: answer.error_description },
      answer.status,
      headers,
    );
  return c.json(answer, 200, headers);
}

/** GET /device[?user_code=…]: the code form, or the sign-in form first when signed out. */
async function showDevice(c: Ctx) {
  const typed = (c.req.query("user_code") ?? "").slice(0, 20);
  const caller = await cookieSession(c);
  if (!caller) {
    const query = typed ? new URLSearchParams({ user_code: typed }).toString() : "";
    return page(c, signInPage(query, undefined, DEVICE_PATHS.verification), 200);
  }
  return page(c, deviceCodePage(normalizeUserCode(typed) ? typed : ""), 200);
}

/**
 * POST /device: the sign-in form, the typed code (shown back with who asks, to allow or deny), and the
 * decision. Every post must come from our own origin (a cross-site form is 403: it could otherwise
 * approve an attacker's code in a victim's session), and every code tried counts against the guessing
 * limit, per IP and per account.
 */
async function submitDevice(c: Ctx) {
  const refusal = crossSiteRefusal(c);
  if (refusal) return page(c, errorPage(refusal), 403);
  const form = await c.req.formData().catch(() => undefined);
  if (!form)
    return page(c, errorPage("the form could not be read: send application/x-www-form-urlencoded"), 400);
  const field = (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value.slice(0, 4096) : "";
  };
  const intent = field("intent");
  if (intent === "sign_in")
    return signIn(c, field("oauth_query"), field("email"), field("password"), DEVICE_PATHS.verification);
  if (intent !== "lookup" && intent !== "decide")
    return page(c, errorPage('intent: must be "sign_in", "lookup" or "decide"'), 400);
  const caller = await cookieSession(c);
  if (!caller) return page(c, errorPage("you are signed out: open this page again and sign in"), 401);
  const typed = field("user_code").slice(0, 20);
  try {
    await enforceRateLimit(c, "deviceVerify");
    await enforceRateLimit(c, "deviceVerify", `user:${caller.user.id}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 429)
      return page(c, deviceCodePage(typed, error.message), 429);
    throw error;
  }
  if (intent === "lookup") {
    const pending = await findPendingDevice(c.env, c.get("db"), typed);
    if (!pending)
      return page(c, deviceCodePage(typed, "This code is unknown, expired or already used."), 400);
    const [team] = await c
      .get("db")
      .select({ name: teams.name })
      .from(teams)
      .where(eq(teams.id, caller.teamId));
    return page(
      c,
      deviceConsentPage({
        clientName: pending.clientName,
        code: displayUserCode(pending.row.userCode),
        userEmail: caller.user.email,
        teamName: team?.name ?? caller.teamId,
      }),
      200,
    );
  }
  const approve = field("decision") === "approve";
  const decided = await decideDevice(c.env, c.get("db"), caller, typed, approve);
  if (!decided.ok) return page(c, deviceCodePage("", decided.reason), 400);
  if (approve) auditDirectly(c, caller, "connector.grant", 200, decided.clientName);
  return page(c, deviceDonePage(approve, decided.clientName), 200);
}

export const deviceRouter = new Hono<AppEnv>()
  .post(DEVICE_PATHS.authorization, jsonBodyLimit, deviceAuthorization)
  .get(DEVICE_PATHS.verification, showDevice)
  .post(DEVICE_PATHS.verification, jsonBodyLimit, submitDevice);
