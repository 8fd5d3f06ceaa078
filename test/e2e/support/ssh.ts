import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import ssh2 from "ssh2";

const run = promisify(execFile);

export interface ClientKey {
  privatePath: string;
  publicKey: string;
}

/** A fresh ed25519 key pair made by OpenSSH's own ssh-keygen. */
export async function makeKey(comment = "e2e@test"): Promise<ClientKey> {
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-sshkey-"));
  const privatePath = path.join(dir, "id_ed25519");
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", privatePath]);
  return { privatePath, publicKey: (await readFile(`${privatePath}.pub`, "utf8")).trim() };
}

/** Runs a command through the gateway with the real OpenSSH client; never throws. */
export async function sshRun(
  key: ClientKey,
  port: number,
  command: string,
  knownHosts: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      "ssh",
      [
        "-i",
        key.privatePath,
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=accept-new",
        "-o",
        `UserKnownHostsFile=${knownHosts}`,
        "-o",
        "ConnectTimeout=10",
        "-p",
        String(port),
        "pod_user@127.0.0.1",
        command,
      ],
      { timeout: 30_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === "number" ? e.code : 255,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? "",
    };
  }
}

/** The gateway's host key as `ssh-keyscan` sees it. */
export async function hostKeyOf(port: number): Promise<string> {
  const { stdout } = await run("ssh-keyscan", ["-p", String(port), "-t", "ed25519", "127.0.0.1"], {
    timeout: 15_000,
  });
  return stdout.trim().split(/\s+/).slice(1).join(" ");
}

/**
 * One login with a fresh random key (ssh2's client, from the loopback address `from`), as a
 * scanner tries them: how it ended ("refused" when the gateway said no).
 */
export function randomKeyLogin(port: number, from: string): Promise<string> {
  const { privateKey } = generateKeyPairSync("ec", {
    namedCurve: "prime256v1",
    privateKeyEncoding: { type: "sec1", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return new Promise((resolve) => {
    let outcome: string | undefined;
    const client = new ssh2.Client();
    const socket = connect({ host: "127.0.0.1", port, localAddress: from });
    socket.on("error", (err) => {
      outcome ??= `socket: ${err.message}`;
    });
    client.on("ready", () => {
      outcome ??= "logged in";
      client.end();
    });
    client.on("error", (err: Error & { level?: string }) => {
      outcome ??= err.level === "client-authentication" ? "refused" : `error: ${err.message}`;
    });
    client.on("close", () => resolve(outcome ?? "closed"));
    socket.once("connect", () =>
      client.connect({
        sock: socket,
        username: "pod_user",
        privateKey,
        tryKeyboard: false,
        readyTimeout: 30_000,
        hostVerifier: () => true,
      }),
    );
  });
}
