import { and, eq, gt, isNull, lt, lte, or } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type DeviceAuthorizationRow, deviceAuthorizations } from "../../db/schema";
import type { Bindings } from "../../env";
import { sha256Hex } from "../../lib/crypto";
import { isoIn, MINUTE, nowIso } from "../../lib/time";
import type { Caller } from "../auth/caller";
import { recordGrant } from "./grants";
import { authorizationServer, CONNECTOR_TTL_S, type ConnectorProps, OAUTH_PATHS, resourceOf } from "./oauth";

/**
 * The OAuth 2.0 device authorization grant (RFC 8628) on top of @cloudflare/workers-oauth-provider,
 * which has no device grant of its own (docs/connectors.md#device-login). The nearest equivalent it
 * allows: the device endpoint and the user-code page are ours; approving a code runs the library's
 * own authorization (`completeAuthorization`, PKCE S256 with a verifier that stays in the Worker) and
 * keeps the authorization code; the device's next poll of the token endpoint exchanges that code
 * through the library's token endpoint. So the tokens, their lifetimes, refresh and revocation are
 * exactly the browser login's, and the grant is a connector grant like any other.
 */

export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";
export const DEVICE_PATHS = {
  authorization: "/oauth/device_authorization",
  verification: "/device",
} as const;
/** A code lives ten minutes; a device polls at most every five seconds. */
export const DEVICE_CODE_TTL_MS = 10 * MINUTE;
export const DEVICE_POLL_INTERVAL_S = 5;

/**
 * RFC 8628 §6.1: 8 characters of 20 consonants (no vowels: no words; no look-alikes), ~34.6 bits;
 * guessing is limited per IP and per account at the page (docs/connectors.md).
 */
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;

function userCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(USER_CODE_LENGTH * 2));
  let out = "";
  for (const b of bytes) {
    if (b >= 240) continue; // 240 = 12 × 20: no modulo bias
    out += USER_CODE_ALPHABET[b % 20];
    if (out.length === USER_CODE_LENGTH) break;
  }
  return out.length === USER_CODE_LENGTH ? out : userCode();
}

/** What the user typed (any case, spaces or dashes) as stored, or undefined when it cannot be one. */
export function normalizeUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return undefined;
  return code;
}

export const displayUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** An OAuth error answer of the device endpoints (RFC 6749 §5.2 / RFC 8628 §3.5). */
export interface OAuthFailure {
  error: string;
  error_description: string;
  status: 400 | 401;
}
const oauthFail = (error: string, description: string, status: 400 | 401 = 400): OAuthFailure => ({
  error,
  error_description: description,
  status,
});

export interface DeviceStart {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/**
 * RFC 8628 §3.1–3.2: a public client registered with a loopback redirect URI (what the CLI registers)
 * asks for a code pair. The redirect URI is only the library's bookkeeping: no browser visits it.
 */
export async function startDeviceAuthorization(
  env: Bindings,
  db: Db,
  clientId: string,
): Promise<DeviceStart | OAuthFailure> {
  if (!clientId) return oauthFail("invalid_request", "client_id is required");
  const oauth = authorizationServer(env).getOAuthApi(env);
  const client = await oauth.lookupClient(clientId.slice(0, 200)).catch(() => null);
  if (!client) return oauthFail("invalid_client", "unknown client_id", 401);
  if (client.tokenEndpointAuthMethod !== "none")
    return oauthFail(
      "unauthorized_client",
      "the device login is for public clients (token_endpoint_auth_method none)",
    );
  const now = nowIso();
  // Expired rows go first: their user codes are free again (the table stays as small as the last ten minutes).
  await db.delete(deviceAuthorizations).where(lt(deviceAuthorizations.expiresAt, now));
  const deviceCode = randomSecret();
  for (let attempt = 0; ; attempt++) {
    const code = userCode();
    try {
      await db.insert(deviceAuthorizations).values({
        id: newId("dva"),
        deviceCodeHash: await sha256Hex(deviceCode),
        userCode: code,
        clientId: client.clientId,
        codeVerifier: randomSecret(),
        status: "pending",
        intervalS: DEVICE_POLL_INTERVAL_S,
        expiresAt: isoIn(DEVICE_CODE_TTL_MS),
        createdAt: now,
      });
      const page = new URL(DEVICE_PATHS.verification, env.PUBLIC_URL);
      const complete = new URL(page);
      complete.searchParams.set("user_code", displayUserCode(code));
      return {
        device_code: deviceCode,
        user_code: displayUserCode(code),
        verification_uri: page.toString(),
        verification_uri_complete: complete.toString(),
        expires_in: DEVICE_CODE_TTL_MS / 1000,
        interval: DEVICE_POLL_INTERVAL_S,
      };
    } catch (error) {
      // a user code taken by a live row (unique index): draw another
      if (attempt >= 3) throw error;
    }
  }
}

export interface PendingDevice {
  row: DeviceAuthorizationRow;
  clientName: string;
}

/** The pending, unexpired login a typed code names, with the name its client registered. */
export async function findPendingDevice(
  env: Bindings,
  db: Db,
  typed: string,
): Promise<PendingDevice | undefined> {
  const code = normalizeUserCode(typed);
  if (!code) return undefined;
  const [row] = await db
    .select()
    .from(deviceAuthorizations)
    .where(eq(deviceAuthorizations.userCode, code))
    .limit(1);
  if (row?.status !== "pending" || row.expiresAt <= nowIso()) return undefined;
  const client = await authorizationServer(env)
    .getOAuthApi(env)
    .lookupClient(row.clientId)
    .catch(() => null);
  if (!client) return undefined;
  return { row, clientName: client.clientName ?? client.clientId };
}

/**
 * The signed-in user's decision on a typed code. Approval claims the row (pending → approved, in one
 * conditional update: a code is approved at most once), then makes the grant on the caller's active
 * team through the library, exactly as the consent page does.
 */
export async function decideDevice(
  env: Bindings,
  db: Db,
  caller: Caller,
  typed: string,
  approve: boolean,
): Promise<{ ok: true; clientName: string } | { ok: false; reason: string }> {
  const pending = await findPendingDevice(env, db, typed);
  if (!pending) return { ok: false, reason: "This code is unknown, expired or already used." };
  const { row, clientName } = pending;
  const now = nowIso();
  const claim = and(
    eq(deviceAuthorizations.id, row.id),
    eq(deviceAuthorizations.status, "pending"),
    gt(deviceAuthorizations.expiresAt, now),
  );
  if (!approve) {
    const denied = await db
      .update(deviceAuthorizations)
      .set({ status: "denied" })
      .where(claim)
      .returning({ id: deviceAuthorizations.id });
    return denied.length ? { ok: true, clientName } : { ok: false, reason: "This code was already used." };
  }
  const claimed = await db
    .update(deviceAuthorizations)
    .set({ status: "approved", userId: caller.user.id, teamId: caller.teamId })
    .where(claim)
    .returning({ id: deviceAuthorizations.id });
  if (claimed.length === 0) return { ok: false, reason: "This code was already used." };
  const oauth = authorizationServer(env).getOAuthApi(env);
  const client = await oauth.lookupClient(row.clientId);
  const redirectUri = client?.redirectUris[0];
  if (!client || !redirectUri) return { ok: false, reason: "The app that asked for this code is gone." };
  const connectorId = newId("cng");
  const props: ConnectorProps = { userId: caller.user.id, teamId: caller.teamId, connectorId };
  const { redirectTo } = await oauth.completeAuthorization({
    request: {
      responseType: "code",
      clientId: row.clientId,
      redirectUri,
      scope: [],
      state: "",
      codeChallenge: await s256(row.codeVerifier),
      codeChallengeMethod: "S256",
      resource: resourceOf(env),
    },
    userId: caller.user.id,
    metadata: { connectorId },
    scope: [],
    props,
  });
  const authCode = new URL(redirectTo).searchParams.get("code");
  if (!authCode) return { ok: false, reason: "The login could not be completed; start again on the device." };
  await recordGrant(db, {
    id: connectorId,
    userId: caller.user.id,
    teamId: caller.teamId,
    clientId: row.clientId,
    clientName: clientName.slice(0, 200),
    redirectHost: "device login",
    lastUsedAt: null,
    expiresAt: isoIn(CONNECTOR_TTL_S * 1000),
    createdAt: now,
  });
  await db
    .update(deviceAuthorizations)
    .set({ authCode, redirectUri, connectorId })
    .where(eq(deviceAuthorizations.id, row.id));
  return { ok: true, clientName };
}

/**
 * RFC 8628 §3.4–3.5: the device's poll. Pending is `authorization_pending`, a poll sooner than the
 * interval `slow_down`, past ten minutes `expired_token`, a denial `access_denied`; an approved code
 * is claimed once (approved → used) and exchanged at the library's token endpoint, whose answer is
 * the device's. A second poll after that is `invalid_grant`.
 */
export async function pollDeviceToken(
  env: Bindings,
  db: Db,
  ctx: ExecutionContext,
  form: { device_code: string; client_id: string },
): Promise<Response | OAuthFailure> {
  if (!form.device_code || !form.client_id)
    return oauthFail("invalid_request", "device_code and client_id are required");
  const hash = await sha256Hex(form.device_code.slice(0, 200));
  const [row] = await db
    .select()
    .from(deviceAuthorizations)
    .where(eq(deviceAuthorizations.deviceCodeHash, hash))
    .limit(1);
  if (!row || row.clientId !== form.client_id) return oauthFail("invalid_grant", "unknown device_code");
  const now = nowIso();
  if (row.status === "used") return oauthFail("invalid_grant", "this device_code was already exchanged");
  if (row.expiresAt <= now) return oauthFail("expired_token", "the device_code expired: start again");
  if (row.status === "denied") return oauthFail("access_denied", "the user denied the login");
  // at most one poll per interval: a conditional update claims this poll's slot
  const earliest = new Date(Date.now() - row.intervalS * 1000 + 250).toISOString();
  const slot = await db
    .update(deviceAuthorizations)
    .set({ lastPolledAt: now })
    .where(
      and(
        eq(deviceAuthorizations.id, row.id),
        or(isNull(deviceAuthorizations.lastPolledAt), lte(deviceAuthorizations.lastPolledAt, earliest)),
      ),
    )
    .returning({ id: deviceAuthorizations.id });
  if (slot.length === 0) return oauthFail("slow_down", `poll at most every ${row.intervalS} seconds`);
  // approved but its code not yet written (the approval is still running): still pending
  if (row.status === "pending" || !row.authCode || !row.redirectUri)
    return oauthFail("authorization_pending", "the user has not confirmed the code yet");
  const claimed = await db
    .update(deviceAuthorizations)
    .set({ status: "used", authCode: null })
    .where(and(eq(deviceAuthorizations.id, row.id), eq(deviceAuthorizations.status, "approved")))
    .returning({ id: deviceAuthorizations.id });
  if (claimed.length === 0) return oauthFail("invalid_grant", "this device_code was already exchanged");
  const exchange = new Request(new URL(OAUTH_PATHS.token, resourceOf(env)), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: row.authCode,
      client_id: row.clientId,
      redirect_uri: row.redirectUri,
      code_verifier: row.codeVerifier,
    }).toString(),
  });
  return authorizationServer(env).fetch(exchange, env, ctx);
}
