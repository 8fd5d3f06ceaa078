import { createHash } from "node:crypto";
import { chmod, mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ssh2 } from "./ssh2";

const OPENSSH_PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----";

export interface HostKey {
  /** OpenSSH private key, as ssh2's Server takes it */
  privateKey: string;
  /** `ssh-ed25519 AAAA…`: what clients pin in known_hosts */
  publicKey: string;
  /** `SHA256:…`, as `ssh-keygen -l` prints it */
  fingerprint: string;
  path: string;
}

/**
 * The host's SSH identity: one ed25519 key under `<stateDir>/ssh/`, made on first start and kept,
 * so that clients never see a changed host key after an agent restart. A key file that exists but
 * does not parse is an error, never silently replaced (that is exactly the warning we must not cause).
 *
 * A start with the key and its `.pub` (written beside it when it was made) reads both without ssh2
 * (./ssh2.ts: loaded only when the first SSH client connects, and ssh2 checks the key then); the key
 * must still look like an OpenSSH private key and the `.pub` like a public key. Otherwise ssh2 parses
 * the key now, as before.
 */
export async function loadOrCreateHostKey(stateDir: string): Promise<HostKey> {
  const dir = join(stateDir, "ssh");
  const path = join(dir, "ssh_host_ed25519_key");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let privateKey: string;
  try {
    privateKey = await readFile(path, "utf8");
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    const pair = ssh2().utils.generateKeyPairSync("ed25519", { comment: "podhost-gateway" });
    privateKey = pair.private;
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, privateKey, { mode: 0o600 });
    await writeFile(`${path}.pub`, `${pair.public}\n`, { mode: 0o644 });
    await rename(tmp, path);
  }
  const pub = await readFile(`${path}.pub`, "utf8").catch(() => "");
  const [pubType, pubBase64] = pub.trim().split(/\s+/);
  if (privateKey.trimStart().startsWith(OPENSSH_PRIVATE_KEY) && pubType?.startsWith("ssh-") && pubBase64) {
    const blob = Buffer.from(pubBase64, "base64");
    return { privateKey, publicKey: `${pubType} ${pubBase64}`, fingerprint: fingerprintOf(blob), path };
  }
  const parsed = ssh2().utils.parseKey(privateKey);
  if (parsed instanceof Error || Array.isArray(parsed) || !parsed.isPrivateKey()) {
    throw new Error(`SSH host key ${path} is unreadable; move it away to have a new one made`);
  }
  const blob = parsed.getPublicSSH();
  return {
    privateKey,
    publicKey: `${parsed.type} ${blob.toString("base64")}`,
    fingerprint: fingerprintOf(blob),
    path,
  };
}

const fingerprintOf = (blob: Buffer) =>
  `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
