import { createHash, randomBytes } from "node:crypto";
import { type StoredLogin, writeLogin } from "./config";
import { CliError, EXIT } from "./errors";

/**
 * The OAuth client side of `podhost login` (docs/cli.md#login): the service's connector OAuth provider
 * (docs/connectors.md), a public client registered dynamically at each login, PKCE S256, and the
 * device authorization grant (RFC 8628) for machines without a browser.
 */

export const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const CLIENT_NAME = "podhost CLI";

export interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  expires_in?: number;
  /** extensions of this service's token endpoint: the grant made and the team it acts on */
  connector_id?: string;
  team_id?: string;
}

interface OAuthErrorBody {
  error?: string;
  error_description?: string;
}

const b64url = (buf: Buffer) => buf.toString("base64url");

export function pkce(): { verifier: string; challenge: string } {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash("sha256").update(verifier).digest()) };
}

export const randomState = () => b64url(randomBytes(16));

async function oauthJson(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(`${res.url} answered ${res.status} with something that is not JSON`);
  }
}

function oauthFailure(what: string, status: number, body: unknown): CliError {
  const b = (body ?? {}) as OAuthErrorBody & { error?: string };
  const text = [b.error, b.error_description].filter(Boolean).join(": ") || `HTTP ${status}`;
  return new CliError(
    `${what}: ${text} (HTTP ${status})`,
    status === 401 || status === 403 ? EXIT.auth : EXIT.error,
    status,
  );
}

async function post(url: string, body: URLSearchParams | object): Promise<{ status: number; body: unknown }> {
  const json = !(body instanceof URLSearchParams);
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": json ? "application/json" : "application/x-www-form-urlencoded",
        "user-agent": "podhost-cli",
      },
      body: json ? JSON.stringify(body) : body.toString(),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    throw new CliError(`cannot reach ${new URL(url).origin}: ${cause?.code ?? String(error)}`);
  }
  return { status: res.status, body: await oauthJson(res) };
}

/** RFC 7591 registration of a public client with the given loopback redirect URI. */
export async function registerClient(api: string, redirectUri: string): Promise<string> {
  const res = await post(new URL("/oauth/register", api).toString(), {
    client_name: CLIENT_NAME,
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
  });
  const clientId = (res.body as { client_id?: unknown }).client_id;
  if (res.status !== 201 && res.status !== 200)
    throw oauthFailure("registering the CLI as an OAuth client", res.status, res.body);
  if (typeof clientId !== "string") throw new CliError("registering the CLI: the answer has no client_id");
  return clientId;
}

export async function tokenRequest(api: string, form: Record<string, string>) {
  return post(new URL("/oauth/token", api).toString(), new URLSearchParams(form));
}

export function asTokens(what: string, res: { status: number; body: unknown }): TokenAnswer {
  const body = res.body as Partial<TokenAnswer>;
  if (res.status !== 200 || typeof body.access_token !== "string")
    throw oauthFailure(what, res.status, res.body);
  return body as TokenAnswer;
}

export function storedFrom(
  api: string,
  clientId: string,
  tokens: TokenAnswer,
  method: StoredLogin["method"],
): StoredLogin {
  return {
    api,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    expires_at: tokens.expires_in ? Date.now() + tokens.expires_in * 1000 : undefined,
    client_id: clientId,
    connector_id: tokens.connector_id,
    team_id: tokens.team_id,
    method,
  };
}

/**
 * The stored login, refreshed when its access token ends within a minute (refresh tokens rotate: the
 * new pair is written back). A refresh that fails leaves the login as it is: the API's 401 then says
 * to log in again.
 */
export async function freshLogin(login: StoredLogin): Promise<StoredLogin> {
  if (!login.expires_at || login.expires_at - 60_000 > Date.now()) return login;
  if (!login.refresh_token || !login.client_id) return login;
  const res = await tokenRequest(login.api, {
    grant_type: "refresh_token",
    refresh_token: login.refresh_token,
    client_id: login.client_id,
  }).catch(() => undefined);
  if (res?.status !== 200) return login;
  const tokens = res.body as TokenAnswer;
  const next = {
    ...login,
    ...storedFrom(login.api, login.client_id, tokens, login.method),
    connector_id: tokens.connector_id ?? login.connector_id,
    team_id: tokens.team_id ?? login.team_id,
  };
  await writeLogin(next);
  return next;
}
