import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import pc from "picocolors";
import type { Credential } from "../lib/api";
import { credentialsFile, readLogin, removeLogin, writeLogin } from "../lib/config";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import {
  asTokens,
  DEVICE_GRANT,
  pkce,
  randomState,
  registerClient,
  storedFrom,
  tokenRequest,
} from "../lib/oauth";

const LOGIN_TIMEOUT_MS = 5 * 60_000;

/** Opens a URL in the user's browser, best effort (argv, no shell); the URL is printed before. */
function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["rundll32", ["url.dll,FileProtocolHandler", url]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(cmd, args as string[], { stdio: "ignore", detached: true });
    child.on("error", () => {});
    child.unref();
  } catch {
    // no browser: the printed URL is the way
  }
}

const PAGE = (text: string) =>
  `<!doctype html><meta charset="utf-8"><title>podhost</title><body style="font-family:system-ui;margin:3rem"><p>${text}</p></body>`;

/**
 * A one-shot listener on 127.0.0.1 (RFC 8252 §7.3: loopback, a port of the system's choosing) that
 * answers the first request to /callback carrying our `state`, then closes.
 */
async function loopbackListener(state: string) {
  let settle: (v: { code: string } | { error: string }) => void = () => {};
  const result = new Promise<{ code: string } | { error: string }>((resolve) => {
    settle = resolve;
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback" || url.searchParams.get("state") !== state) {
      res.writeHead(404, { "content-type": "text/html" }).end(PAGE("Not this login."));
      return;
    }
    const code = url.searchParams.get("code");
    const error = url.searchParams.get("error");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", connection: "close" });
    if (code) {
      res.end(PAGE("Signed in. You can close this tab and go back to the terminal."));
      settle({ code });
    } else {
      res.end(PAGE("The login was not completed. Go back to the terminal."));
      settle({ error: error ?? "no code in the redirect" });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    result,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

async function browserLogin(ctx: Ctx, opts: { browser: boolean }) {
  const api = ctx.api.base;
  const state = randomState();
  const listener = await loopbackListener(state);
  try {
    const clientId = await registerClient(api, listener.redirectUri);
    const { verifier, challenge } = pkce();
    const url = new URL("/authorize", api);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: listener.redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
    }).toString();
    process.stderr.write(
      `Open this address in a browser to sign in (on a machine without one: podhost login --device):\n\n  ${url}\n\n`,
    );
    if (opts.browser) openBrowser(url.toString());
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CliError("login timed out after 5 minutes: run podhost login again", EXIT.auth)),
        LOGIN_TIMEOUT_MS,
      );
    });
    const outcome = await Promise.race([listener.result, timeout]).finally(() => clearTimeout(timer));
    if ("error" in outcome) throw new CliError(`login refused: ${outcome.error}`, EXIT.auth);
    const tokens = asTokens(
      "exchanging the authorization code",
      await tokenRequest(api, {
        grant_type: "authorization_code",
        code: outcome.code,
        client_id: clientId,
        redirect_uri: listener.redirectUri,
        code_verifier: verifier,
      }),
    );
    return storedFrom(api, clientId, tokens, "browser");
  } finally {
    listener.close();
  }
}

interface DeviceAnswer {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

/** RFC 8628: a code to confirm in any signed-in browser, then poll the token endpoint. */
async function deviceLogin(ctx: Ctx) {
  const api = ctx.api.base;
  // The provider's grants need a registered client; its loopback redirect URI is never visited.
  const clientId = await registerClient(api, "http://127.0.0.1/podhost-device");
  const { status, body } = await (async () => {
    const res = await fetch(new URL("/oauth/device_authorization", api), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "podhost-cli" },
      body: new URLSearchParams({ client_id: clientId }).toString(),
    }).catch((error: unknown) => {
      throw new CliError(`cannot reach ${api}: ${String(error)}`);
    });
    return {
      status: res.status,
      body: (await res.json().catch(() => ({}))) as Partial<DeviceAnswer> & {
        error?: string;
        error_description?: string;
      },
    };
  })();
  if (status !== 200 || !body.device_code || !body.user_code || !body.verification_uri)
    throw new CliError(
      `starting the device login: ${[body.error, body.error_description].filter(Boolean).join(": ") || `HTTP ${status}`} (HTTP ${status})`,
      EXIT.auth,
      status,
    );
  process.stderr.write(
    `On any device with a browser, open\n\n  ${body.verification_uri}\n\nsign in and enter the code  ${pc.bold(body.user_code)}\n` +
      (body.verification_uri_complete ? `(or open ${body.verification_uri_complete})\n` : "") +
      "\nWaiting for the confirmation…\n",
  );
  let interval = (body.interval ?? 5) * 1000;
  const deadline = Date.now() + (body.expires_in ?? 600) * 1000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, interval));
    const res = await tokenRequest(api, {
      grant_type: DEVICE_GRANT,
      device_code: body.device_code,
      client_id: clientId,
    });
    if (res.status === 200) return storedFrom(api, clientId, asTokens("the device login", res), "device");
    const error = (res.body as { error?: string }).error;
    if (error === "authorization_pending") continue;
    if (error === "slow_down") {
      interval += 5000;
      continue;
    }
    if (error === "access_denied") throw new CliError("the login was denied in the browser", EXIT.auth);
    if (error === "expired_token") break;
    asTokens("the device login", res); // throws with the server's words
  }
  throw new CliError("the code expired before it was confirmed: run podhost login --device again", EXIT.auth);
}

export async function login(ctx: Ctx, _args: string[], opts: { device?: boolean; browser?: boolean }) {
  const stored = opts.device
    ? await deviceLogin(ctx)
    : await browserLogin(ctx, { browser: opts.browser !== false });
  await writeLogin(stored);
  const me = await whoamiOf(ctx, { token: stored.access_token, source: "login" }, stored.team_id);
  ctx.out.result({ ...me, credentials_file: credentialsFile() }, () =>
    [
      `${pc.green("✓")} Signed in as ${me.user.email}${me.team ? ` on the team ${me.team.name}` : ""}.`,
      process.env.PODHOST_TOKEN
        ? pc.yellow("Note: PODHOST_TOKEN is set and takes precedence over this login.")
        : "",
    ]
      .filter(Boolean)
      .join("\n"),
  );
}

interface Me {
  user: { id: string; email: string; name: string; active_team_id: string };
  team: { id: string; name: string; slug: string; role: string } | null;
  credential: { source: Credential["source"]; kind: string };
  api: string;
}

function kindOf(token: string): string {
  if (token.startsWith("ipk_")) return "api_token";
  if (token.split(":").length === 3) return "connector";
  return "session";
}

/**
 * Who the credential is, and the team it acts on: a session acts on the user's active team, a
 * login (a connector grant) on the team chosen at consent, an `ipk_` token on its own team, the one
 * of the user's teams that answers to it (every other is 404 to a team-bound credential).
 */
async function whoamiOf(ctx: Ctx, credential: Credential, knownTeam?: string): Promise<Me> {
  const { Api } = await import("../lib/api");
  const api = new Api(ctx.api.base, credential);
  const user = await api.call("get", "/api/auth/user");
  const teams = await api.call("get", "/api/teams");
  const kind = kindOf(credential.token);
  let teamId: string | undefined = knownTeam ?? (kind === "session" ? user.active_team_id : undefined);
  if (!teamId) {
    if (teams.length === 1) teamId = teams[0]?.id;
    else
      for (const t of teams) {
        const ok = await api.call("get", "/api/teams/{id}", { params: { id: t.id } }).then(
          () => true,
          () => false,
        );
        if (ok) {
          teamId = t.id;
          break;
        }
      }
  }
  const team = teams.find((t) => t.id === teamId);
  return {
    user: { id: user.id, email: user.email, name: user.name, active_team_id: user.active_team_id },
    team: team ? { id: team.id, name: team.name, slug: team.slug, role: team.role } : null,
    credential: { source: credential.source, kind },
    api: ctx.api.base,
  };
}

const SOURCE_TEXT: Record<Credential["source"], string> = {
  flag: "the --token option",
  env: "the PODHOST_TOKEN environment variable",
  login: `the stored login`,
};

export async function whoami(ctx: Ctx) {
  requireCredential(ctx);
  const credential = ctx.api.credential as Credential;
  const me = await whoamiOf(ctx, credential, credential.source === "login" ? ctx.login?.team_id : undefined);
  ctx.out.result(me, () =>
    [
      `${me.user.name} <${me.user.email}>`,
      `team:       ${me.team ? `${me.team.name} (${me.team.slug}, ${me.team.role})` : "unknown"}`,
      `credential: ${SOURCE_TEXT[credential.source]}${credential.source === "login" ? ` (${credentialsFile()})` : ""}, ${me.credential.kind.replace("_", " ")}`,
      `api:        ${me.api}`,
    ].join("\n"),
  );
}

/**
 * Revokes the stored login's grant on the server (`DELETE /api/connectors/{id}`: a connector may
 * revoke its own grant), then deletes the file. A grant already gone is fine; a server that cannot
 * be reached keeps the file, so that the grant is not left alive unknowingly.
 */
export async function logout(ctx: Ctx) {
  const login = await readLogin();
  if (!login) {
    ctx.out.result({ status: "logged_out", revoked: false }, () => "Not logged in.");
    return;
  }
  let revoked = false;
  if (login.connector_id) {
    const { Api } = await import("../lib/api");
    const api = new Api(login.api, { token: login.access_token, source: "login" });
    try {
      await api.call("delete", "/api/connectors/{id}", { params: { id: login.connector_id } });
      revoked = true;
    } catch (error) {
      const status = (error as { status?: number }).status;
      // 401/404: the grant is already revoked or expired; anything else keeps the file
      if (status !== 401 && status !== 404) throw error;
    }
  }
  await removeLogin();
  ctx.out.result({ status: "logged_out", revoked }, () =>
    revoked ? "Logged out; the login's access was revoked on the server." : "Logged out.",
  );
  if (process.env.PODHOST_TOKEN) ctx.out.note(pc.yellow("PODHOST_TOKEN is still set in this environment."));
}
