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
    const pair = newKeyPair();
    privateKey = pair.private;
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, privateKey, { mode: 0o600 });
    await writeFile(`${path}.pub`, `${pair.public}\n`, { mode: 0o644 });
    await rename(tmp, path);
  }
  const pub = await readFile(`${path}.pub`, "utf8").catch(() => "");
  const [pubType, pubBase64] = pub.trim().split(/\s+/);
  const blob = pubBase64 ? Buffer.from(pubBase64, "base64") : undefined;
  if (privateKey.trimStart().startsWith(OPENSSH_PRIVATE_KEY) && blob && wholeEd25519(pubType, blob)) {
    return { privateKey, publicKey: `${pubType} ${pubBase64}`, fingerprint: fingerprintOf(blob), path };
  }
  const parsed = ssh2().utils.parseKey(privateKey);
  if (parsed instanceof Error || Array.isArray(parsed) || !parsed.isPrivateKey()) {
    throw new Error(`SSH host key ${path} is unreadable; move it away to have a new one made`);
  }
  const parsedBlob = parsed.getPublicSSH();
  return {
    privateKey,
    publicKey: `${parsed.type} ${parsedBlob.toString("base64")}`,
    fingerprint: fingerprintOf(parsedBlob),
    path,
  };
}

/**
 * A new ed25519 pair in OpenSSH form. ssh2's keygen strips leading zero bytes from the public key
 * it copies out of the DER, so about one key in 256 to 512 comes out with a 31-byte public key that
 * ssh2 itself then refuses ("Malformed OpenSSH private key"); the gateway would crash on its first
 * client. Such a pair is drawn again.
 */
export function newKeyPair(): { private: string; public: string } {
  for (;;) {
    const pair = ssh2().utils.generateKeyPairSync("ed25519", { comment: "podhost-gateway" });
    if (!(ssh2().utils.parseKey(pair.private) instanceof Error)) return pair;
  }
}

/**
 * The `.pub` holds a whole key: for ed25519, the type's name and 32 bytes (string, string in the
 * SSH wire form). A key written by an agent before newKeyPair (31 bytes) fails here, so the start
 * parses it with ssh2 and says the key is unreadable, rather than the first client crashing the agent.
 */
function wholeEd25519(type: string | undefined, blob: Buffer): boolean {
  if (type !== "ssh-ed25519" || blob.length < 4) return false;
  const nameLength = blob.readUInt32BE(0);
  const at = 4 + nameLength;
  return blob.length === at + 4 + 32 && blob.readUInt32BE(at) === 32;
}

const fingerprintOf = (blob: Buffer) =>
  `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
