import { AuthorizationError, CimdFetchError } from "@cloudflare/workers-oauth-provider";
import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { Hono } from "hono";
import { newId } from "../../../shared/ids";
import { teams } from "../../db/schema";
import type { AppEnv } from "../../http/app-env";
import { auditDirectly } from "../../http/audit-trail";
import { jsonBodyLimit, oauthRegistrationBodyLimit } from "../../http/body-limit";
import { ApiError } from "../../http/errors";
import { crossSiteRefusal } from "../../http/middleware";
import { beginPasswordAttempt, enforceRateLimit } from "../../http/rate-limit";
import { serviceContext } from "../../http/router";
import { sessionCookie, setSessionCookie } from "../../http/session-cookie";
import { isoIn } from "../../lib/time";
import { login } from "../../services/auth/accounts";
import type { Caller } from "../../services/auth/caller";
import { resolveCredential } from "../../services/auth/credentials";
import { DEVICE_GRANT_TYPE, DEVICE_PATHS, pollDeviceToken } from "../../services/connectors/device";
import { recordGrant } from "../../services/connectors/grants";
import {
  authorizationServer,
  CONNECTOR_TTL_S,
  type ConnectorProps,
  OAUTH_PATHS,
  resourceOf,
} from "../../services/connectors/oauth";
import { deviceRouter } from "./device";
import { consentPage, errorPage, signInPage } from "./pages";

type Ctx = Context<AppEnv>;

/** The browser's signed-in user: the session cookie only (a page cannot send a Bearer header). */
export async function cookieSession(c: Ctx): Promise<Caller | undefined> {
  const token = sessionCookie(c);
  if (!token) return undefined;
  const resolved = await resolveCredential(c.get("db"), c.env, token);
  return resolved?.caller.via === "session" ? resolved.caller : undefined;
}

export async function page(
  c: Ctx,
  body: ReturnType<typeof errorPage>,
  status: 200 | 400 | 401 | 403 | 429,
  headers?: Headers,
) {
  const res = await c.html(await body, status);
  headers?.forEach((value, key) => {
    res.headers.append(key, value);
  });
  res.headers.set("Cache-Control", "no-store");
  // Never framed (clickjacking an Allow button): the consent page gets this from the library, the
  // sign-in and device pages from here.
  if (!res.headers.has("X-Frame-Options")) res.headers.set("X-Frame-Options", "DENY");
  if (!res.headers.has("Content-Security-Policy"))
    res.headers.set("Content-Security-Policy", "frame-ancestors 'none'");
  return res;
}

/**
 * Failures of the authorization request: back to the client only when the library has validated
 * the client and its exact redirect URI (`redirectTo`); otherwise said on our page, never
 * redirected (an unregistered redirect_uri must not become an open redirect).
 */
function authorizeFailure(c: Ctx, error: unknown) {
  if (error instanceof AuthorizationError && error.redirectTo) return c.redirect(error.redirectTo, 302);
  if (error instanceof AuthorizationError) return page(c, errorPage(error.description), 400);
  if (error instanceof CimdFetchError)
    return page(c, errorPage("this app's metadata could not be verified"), 400);
  throw error;
}

/** GET /authorize: the sign-in form when signed out, else the consent page for the active team. */
async function showAuthorize(c: Ctx) {
  const oauth = authorizationServer(c.env).getOAuthApi(c.env);
  let request: Awaited<ReturnType<typeof oauth.parseAuthRequest>>;
  try {
    request = await oauth.parseAuthRequest(c.req.raw);
  } catch (error) {
    return authorizeFailure(c, error);
  }
  const caller = await cookieSession(c);
  if (!caller) return page(c, signInPage(new URL(c.req.url).search.slice(1)), 200);
  const details = await oauth.describeConsent(request);
  const consent = await oauth.beginConsent(request);
  const [team] = await c
    .get("db")
    .select({ name: teams.name })
    .from(teams)
    .where(eq(teams.id, caller.teamId));
  return page(
    c,
    consentPage({
      details,
      handle: consent.handle,
      userEmail: caller.user.email,
      teamName: team?.name ?? caller.teamId,
    }),
    200,
    consent.headers,
  );
}

/** POST /authorize: the sign-in form, or the consent form's decision. */
async function submitAuthorize(c: Ctx) {
  // The forms are posted by our own pages: a form of another origin is refused whatever it carries,
  // as any change the session cookie would authorize (http/middleware.ts).
  const refusal = crossSiteRefusal(c);
  if (refusal) return page(c, errorPage(refusal), 403);
  const form = await c.req.formData().catch(() => undefined);
  if (!form)
    return page(c, errorPage("the form could not be read: send application/x-www-form-urlencoded"), 400);
  const field = (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value : "";
  };
  if (field("intent") === "sign_in")
    return signIn(c, field("oauth_query"), field("email"), field("password"));
  if (field("intent") === "consent") return decide(c, field("handle"), field("decision"));
  return page(c, errorPage('intent: must be "sign_in" or "consent"'), 400);
}

/**
 * The sign-in form of the authorization page (and of the device page, `backPath` /device): back to
 * that path on our own origin, with the query as given. The path is fixed, so the query cannot send
 * the browser anywhere else, and the page validates it again.
 */
export async function signIn(
  c: Ctx,
  query: string,
  email: string,
  password: string,
  backPath: string = OAUTH_PATHS.authorize,
) {
  const back = new URL(backPath, c.env.PUBLIC_URL);
  back.search = query.slice(0, 4096);
  const form = (error: string) => signInPage(back.search.slice(1), error, backPath);
  if (!email || !password) return page(c, form("email and password are required"), 400);
  // The login route's limits: per IP, and per account (the password backoff).
  try {
    await enforceRateLimit(c, "login");
    const attempt = await beginPasswordAttempt(c, email);
    const result = await login(serviceContext(c), { email, password });
    if (!result.ok) return page(c, form(result.message), 401);
    await attempt.succeeded();
    setSessionCookie(c, result.value.token);
  } catch (error) {
    if (error instanceof ApiError && error.status === 429) {
      return page(c, form(error.message), 429);
    }
    throw error;
  }
  return c.redirect(`${back.pathname}${back.search}`, 303);
}

async function decide(c: Ctx, handle: string, decision: string) {
  const caller = await cookieSession(c);
  if (!caller) return page(c, errorPage("you are signed out: start connecting again from the app"), 401);
  const oauth = authorizationServer(c.env).getOAuthApi(c.env);
  try {
    if (decision !== "approve") {
      const denied = await oauth.denyConsent(c.req.raw, handle);
      return new Response(null, { status: 302, headers: denied.headers });
    }
    const approved = await oauth.approveConsent(c.req.raw, handle, { scope: [] });
    const client = await oauth.lookupClient(approved.request.clientId);
    const connectorId = newId("cng");
    const props: ConnectorProps = { userId: caller.user.id, teamId: caller.teamId, connectorId };
    const { redirectTo } = await oauth.completeAuthorization({
      request: approved.request,
      userId: caller.user.id,
      metadata: { connectorId },
      scope: [],
      props,
    });
    const now = new Date().toISOString();
    await recordGrant(c.get("db"), {
      id: connectorId,
      userId: caller.user.id,
      teamId: caller.teamId,
      clientId: approved.request.clientId,
      clientName: (client?.clientName ?? approved.request.clientId).slice(0, 200),
      redirectHost: new URL(approved.request.redirectUri).host.slice(0, 200),
      lastUsedAt: null,
      expiresAt: isoIn(CONNECTOR_TTL_S * 1000),
      createdAt: now,
    });
    auditDirectly(c, caller, "connector.grant", 302, client?.clientName ?? approved.request.clientId);
    approved.headers.set("Location", redirectTo);
    return new Response(null, { status: 302, headers: approved.headers });
  } catch (error) {
    if (error instanceof AuthorizationError) {
      return page(c, errorPage(`${error.description} Start connecting again from the app.`), 400);
    }
    throw error;
  }
}

/** RFC 9728: the whole API is one protected resource, and this server its authorization server. */
function protectedResourceMetadata(c: Ctx) {
  const resource = resourceOf(c.env);
  return c.json(
    {
      resource,
      authorization_servers: [resource],
      bearer_methods_supported: ["header"],
      resource_name: "podhost API and MCP server",
    },
    200,
    { "Access-Control-Allow-Origin": "*", "Cache-Control": "no-store" },
  );
}

/**
 * The provider's endpoints (metadata, token, registration) answer only at PUBLIC_URL's origin, the
 * issuer's (the library matches the request's origin). Asked elsewhere (`127.0.0.1:8787` beside
 * `localhost:8787`, another host name of the Worker), the answer says so as `{error}` instead of
 * the library's empty 404.
 */
async function provider(c: Ctx) {
  const issuer = resourceOf(c.env);
  const origin = new URL(c.req.url).origin;
  if (origin !== issuer)
    return c.json(
      {
        error: `not found: the OAuth endpoints answer at ${issuer} (PUBLIC_URL's origin), not at ${origin.slice(0, 200)}`,
      },
      404,
    );
  return authorizationServer(c.env).fetch(c.req.raw, c.env, c.executionCtx as ExecutionContext);
}

/**
 * Token answers (200 with an access token) name the grant they belong to and the team it acts on,
 * `connector_id` and `team_id` (extension parameters, RFC 6749 §5.1): the CLI revokes its own grant
 * at logout with `DELETE /api/connectors/{connector_id}` and says which team it acts on.
 */
async function withGrantFacts(c: Ctx, res: Response): Promise<Response> {
  if (res.status !== 200 || !res.headers.get("content-type")?.includes("json")) return res;
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as Record<string, unknown> | undefined;
  if (typeof body?.access_token !== "string") return res;
  const summary = await authorizationServer(c.env)
    .getOAuthApi(c.env)
    .unwrapToken<ConnectorProps>(body.access_token)
    .catch(() => null);
  const props = summary?.grant.props;
  if (!props?.connectorId) return res;
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify({ ...body, connector_id: props.connectorId, team_id: props.teamId }), {
    status: 200,
    headers,
  });
}

/**
 * `POST /oauth/token`: the device grant (RFC 8628 §3.4) is answered here (services/connectors/device.ts),
 * every other grant and revocation by the library.
 */
async function token(c: Ctx) {
  if (c.req.method === "POST" && new URL(c.req.url).origin === resourceOf(c.env)) {
    const form = await c.req.raw
      .clone()
      .formData()
      .catch(() => undefined);
    if (form?.get("grant_type") === DEVICE_GRANT_TYPE) {
      const field = (name: string) => {
        const v = form.get(name);
        return typeof v === "string" ? v : "";
      };
      const answer = await pollDeviceToken(c.env, c.get("db"), c.executionCtx as ExecutionContext, {
        device_code: field("device_code"),
        client_id: field("client_id"),
      });
      if (answer instanceof Response) return withGrantFacts(c, answer);
      return c.json({ error: answer.error, error_description: answer.error_description }, answer.status, {
        "Cache-Control": "no-store",
      });
    }
  }
  return withGrantFacts(c, await provider(c));
}

/** RFC 8414 metadata: the library's, with the device endpoint and grant added (RFC 8628 §4). */
async function metadata(c: Ctx) {
  const res = await provider(c);
  if (res.status !== 200) return res;
  const body = (await res.json()) as Record<string, unknown>;
  const grants = Array.isArray(body.grant_types_supported) ? body.grant_types_supported : [];
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(
    JSON.stringify({
      ...body,
      device_authorization_endpoint: new URL(DEVICE_PATHS.authorization, resourceOf(c.env)).toString(),
      grant_types_supported: [...grants, DEVICE_GRANT_TYPE],
    }),
    { status: 200, headers },
  );
}

/** Caps on what dynamic registration stores (besides the body's 8 KiB), RFC 7591's field names. */
const REGISTRATION_CAPS = { redirectUris: 5, uri: 512, clientName: 100, contacts: 5 } as const;
const URI_FIELDS = ["client_uri", "logo_uri", "policy_uri", "tos_uri", "jwks_uri"] as const;

/** RFC 7591's error for metadata it refuses, or undefined when the registration may go on. */
function registrationRefusal(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined; // the provider says
  const m = body as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (Array.isArray(uris)) {
    if (uris.length > REGISTRATION_CAPS.redirectUris)
      return `redirect_uris: at most ${REGISTRATION_CAPS.redirectUris}`;
    if (uris.some((u) => typeof u === "string" && u.length > REGISTRATION_CAPS.uri))
      return `redirect_uris: each at most ${REGISTRATION_CAPS.uri} characters`;
  }
  if (typeof m.client_name === "string" && m.client_name.length > REGISTRATION_CAPS.clientName)
    return `client_name: at most ${REGISTRATION_CAPS.clientName} characters`;
  for (const field of URI_FIELDS) {
    const v = m[field];
    if (typeof v === "string" && v.length > REGISTRATION_CAPS.uri)
      return `${field}: at most ${REGISTRATION_CAPS.uri} characters`;
  }
  if (Array.isArray(m.contacts) && m.contacts.length > REGISTRATION_CAPS.contacts)
    return `contacts: at most ${REGISTRATION_CAPS.contacts}`;
  // localized variants (`client_name#fr`, RFC 7591 §2.2) are stored too: none are needed here
  const localized = Object.keys(m).find((k) => k.includes("#"));
  if (localized) return `${localized.slice(0, 100)}: localized metadata is not accepted`;
  return undefined;
}

/**
 * `POST /oauth/register` (dynamic client registration: anyone may register, and each client is
 * stored): limited per client IP, its body to 8 KiB and its fields as above, before the provider
 * stores anything. Other methods go to the provider as they are (its 405, CORS preflight).
 */
async function register(c: Ctx) {
  if (c.req.method === "POST" && new URL(c.req.url).origin === resourceOf(c.env)) {
    await enforceRateLimit(c, "oauthRegister");
    let body: unknown;
    try {
      body = JSON.parse(await c.req.raw.clone().text());
    } catch {
      body = undefined; // the provider's own 400
    }
    const refused = registrationRefusal(body);
    if (refused)
      return c.json({ error: "invalid_client_metadata", error_description: refused }, 400, {
        "Cache-Control": "no-store",
      });
  }
  return provider(c);
}

/**
 * OAuth 2.1 for connectors (docs/connectors.md): the authorization endpoint and its pages are ours,
 * and so is the device login (device.ts); metadata, token, revocation and dynamic registration are
 * the provider's.
 */
export const oauthRouter = new Hono<AppEnv>()
  .get(OAUTH_PATHS.authorize, showAuthorize)
  .post(OAUTH_PATHS.authorize, jsonBodyLimit, submitAuthorize)
  .get("/.well-known/oauth-protected-resource", protectedResourceMetadata)
  .all("/.well-known/oauth-authorization-server", metadata)
  .all(OAUTH_PATHS.token, jsonBodyLimit, token)
  .all(OAUTH_PATHS.register, oauthRegistrationBodyLimit, register)
  .route("/", deviceRouter);
