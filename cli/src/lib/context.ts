import { Api, type Credential } from "./api";
import { readLogin, type StoredLogin } from "./config";
import { CliError, EXIT } from "./errors";
import { createOutput, type Output } from "./output";

/** Options every command takes (docs/cli.md). */
export interface GlobalOptions {
  json?: boolean;
  token?: string;
  api?: string;
}

export const DEFAULT_API = "http://localhost:8787";

/** What a command runs with: where to write, the API client and the credential's origin. */
export interface Ctx {
  out: Output;
  api: Api;
  options: GlobalOptions;
  login: StoredLogin | undefined;
}

/** Checks that a string is an http(s) origin to talk to; the API's base URL. */
function baseUrl(value: string, from: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${from}: not a URL: ${value}`, EXIT.usage);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new CliError(`${from}: must be an http or https URL`, EXIT.usage);
  return url.origin;
}

/**
 * The credential, in this order (a stale PODHOST_TOKEN must not be silently overridden by a login,
 * nor the other way round: `whoami` says which one is used): `--token`, then `PODHOST_TOKEN`, then
 * the stored login. The API address: `--api`, then `PODHOST_API`, then the stored login's, then
 * http://localhost:8787 (`npm start`).
 */
export async function createContext(options: GlobalOptions): Promise<Ctx> {
  const out = createOutput(Boolean(options.json));
  const login = await readLogin();
  let credential: Credential | undefined;
  if (options.token !== undefined) {
    if (!options.token) throw new CliError("--token: empty", EXIT.usage);
    credential = { token: options.token, source: "flag" };
  } else if (process.env.PODHOST_TOKEN) credential = { token: process.env.PODHOST_TOKEN, source: "env" };
  else if (login) credential = { token: login.access_token, source: "login" };
  const api = options.api
    ? baseUrl(options.api, "--api")
    : process.env.PODHOST_API
      ? baseUrl(process.env.PODHOST_API, "PODHOST_API")
      : (login?.api ?? DEFAULT_API);
  if (credential?.source === "login" && login && login.api === api) {
    const { freshLogin } = await import("./oauth");
    const fresh = await freshLogin(login);
    credential = { token: fresh.access_token, source: "login" };
  }
  return { out, api: new Api(api, credential), options, login };
}

/** Fails with exit 4 when the command needs a credential and there is none. */
export function requireCredential(ctx: Ctx): void {
  if (!ctx.api.credential)
    throw new CliError(
      "not signed in: run podhost login, or set PODHOST_TOKEN (an ipk_ API token)",
      EXIT.auth,
    );
}
