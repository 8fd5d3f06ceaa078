import { exports } from "cloudflare:workers";
import { freshIp, type TestUser } from "./client";

/** wrangler.toml's PUBLIC_URL: the issuer, the resource, and where the authorization endpoint is. */
export const BASE = "http://localhost:8787";
export const REDIRECT_URI = "http://127.0.0.1:33418/callback";

export interface Raw {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** A request through the Worker at PUBLIC_URL's origin (the OAuth endpoints check where they are asked). */
export async function raw(
  path: string,
  init: RequestInit & { headers?: Record<string, string> } = {},
): Promise<Raw> {
  const res = await exports.default.fetch(`${BASE}${path}`, {
    redirect: "manual",
    ...init,
    headers: { "cf-connecting-ip": freshIp(), ...init.headers },
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = "application/x-www-form-urlencoded";

const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

export async function pkce() {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return { verifier, challenge };
}

/** Dynamic client registration of a public client (PKCE, no secret), as an MCP client does it. */
export async function registerClient(name = "Test Assistant", redirectUri = REDIRECT_URI): Promise<string> {
  const res = await raw("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    }),
  });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${res.text}`);
  return res.json.client_id;
}

export function authorizeQuery(clientId: string, challenge: string, extra: Record<string, string> = {}) {
  return new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "state-123",
    ...extra,
  }).toString();
}

/** `name=value` pairs of every Set-Cookie line, ready for a Cookie header. */
export const cookiesOf = (res: Raw) =>
  res.headers
    .getAll("set-cookie")
    .map((line) => line.split(";")[0])
    .join("; ");

export const handleOf = (html: string) => /name="handle" value="([^"]+)"/.exec(html)?.[1] ?? "";

/** The consent page for a signed-in user: its handle and the cookie binding it to this browser. */
export async function openConsent(user: TestUser, query: string) {
  const page = await raw(`/authorize?${query}`, { headers: { cookie: `pod_session=${user.token}` } });
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${page.text}`);
  return { page, handle: handleOf(page.text), cookie: `pod_session=${user.token}; ${cookiesOf(page)}` };
}

/** Posts the consent form as the page itself would (same origin). */
export const postConsent = (cookie: string, handle: string, decision: "approve" | "deny", origin = BASE) =>
  raw("/authorize", {
    method: "POST",
    headers: { "content-type": FORM, cookie, origin },
    body: form({ intent: "consent", handle, decision }),
  });

export const exchangeCode = (clientId: string, code: string, verifier: string) =>
  raw("/oauth/token", {
    method: "POST",
    headers: { "content-type": FORM },
    body: form({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      code_verifier: verifier,
    }),
  });

export interface Connected {
  clientId: string;
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

/** The whole flow a user and an assistant go through: register, authorize with PKCE, consent, token. */
export async function connect(user: TestUser, clientName = "Test Assistant"): Promise<Connected> {
  const clientId = await registerClient(clientName);
  const { verifier, challenge } = await pkce();
  const { handle, cookie } = await openConsent(user, authorizeQuery(clientId, challenge));
  const approved = await postConsent(cookie, handle, "approve");
  if (approved.status !== 302) throw new Error(`consent: ${approved.status} ${approved.text}`);
  const location = new URL(approved.headers.get("location") ?? "");
  const code = location.searchParams.get("code") ?? "";
  const tokens = await exchangeCode(clientId, code, verifier);
  if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${tokens.text}`);
  return {
    clientId,
    accessToken: tokens.json.access_token,
    refreshToken: tokens.json.refresh_token,
    expiresIn: tokens.json.expires_in,
  };
}
