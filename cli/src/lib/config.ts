import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";

/**
 * The stored login: one file under the XDG config directory (`$XDG_CONFIG_HOME/podhost/`, by default
 * `~/.config/podhost/`), readable by its owner only (directory 0700, file 0600). It holds the API's
 * address and the OAuth tokens the login received.
 */
export interface StoredLogin {
  api: string;
  access_token: string;
  refresh_token?: string;
  /** epoch milliseconds */
  expires_at?: number;
  client_id?: string;
  /** the connector grant the login is (`cng_…`): what `logout` revokes */
  connector_id?: string;
  team_id?: string;
  method: "browser" | "device";
}

export function configDir(): string {
  const xdg = process.env.XDG_CONFIG_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), ".config");
  return path.join(base, "podhost");
}

export const credentialsFile = () => path.join(configDir(), "credentials.json");

export async function readLogin(): Promise<StoredLogin | undefined> {
  let text: string;
  try {
    text = await readFile(credentialsFile(), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<StoredLogin>;
    if (typeof parsed.api !== "string" || typeof parsed.access_token !== "string") return undefined;
    return parsed as StoredLogin;
  } catch {
    return undefined;
  }
}

/** Written to a temporary file created 0600, then renamed: never readable by others, never half written. */
export async function writeLogin(login: StoredLogin): Promise<void> {
  const dir = configDir();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const tmp = path.join(dir, `.credentials.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, credentialsFile());
}

export async function removeLogin(): Promise<void> {
  await rm(credentialsFile(), { force: true });
}
