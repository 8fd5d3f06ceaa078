import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ssh2 from "ssh2";
import { afterEach, describe, expect, it } from "vitest";
import type { Logger } from "../../agent/logger";
import { SshGateway } from "../../agent/ssh/gateway";
import { loadOrCreateHostKey, newKeyPair } from "../../agent/ssh/host-key";
import { freePort } from "./helpers";

/**
 * The gateway's host key (agent/ssh/host-key.ts). ssh2's own ed25519 keygen makes about one key in
 * 256–512 that ssh2 cannot read back; the agent that drew one crashed on its first SSH client (a
 * CI run's cli.test.ts: every later test met "its agent is not connected").
 */

const dirs: string[] = [];
const stateDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), "podhost-host-key-"));
  dirs.push(dir);
  return dir;
};
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A pair as ssh2's keygen makes it one time in a few hundred: its public key cut to 31 bytes. */
function cutPair(): { private: string; public: string } {
  for (;;) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519");
    if (ssh2.utils.parseKey(pair.private) instanceof Error) return pair;
  }
}

describe("the SSH host key", () => {
  it("is never one ssh2 cannot read: 3,000 new pairs all serve", () => {
    // with ssh2's keygen alone, 3,000 pairs hold a bad one but for a chance under 1 in 300
    for (let i = 0; i < 3_000; i++) {
      const pair = newKeyPair();
      expect(ssh2.utils.parseKey(pair.private)).not.toBeInstanceOf(Error);
    }
  });

  it("made on first start, kept after, and an SSH server takes it", async () => {
    const dir = await stateDir();
    const first = await loadOrCreateHostKey(dir);
    const again = await loadOrCreateHostKey(dir);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(again.publicKey).toBe(first.publicKey);
    expect(() => new ssh2.Server({ hostKeys: [again.privateKey] }, () => undefined)).not.toThrow();
  });

  it("a cut key left by an older agent is refused at start with what to do, not at the first client", async () => {
    const dir = await stateDir();
    const pair = cutPair();
    await mkdir(join(dir, "ssh"), { recursive: true });
    await writeFile(join(dir, "ssh", "ssh_host_ed25519_key"), pair.private, { mode: 0o600 });
    await writeFile(join(dir, "ssh", "ssh_host_ed25519_key.pub"), `${pair.public}\n`);
    await expect(loadOrCreateHostKey(dir)).rejects.toThrow(
      /is unreadable; move it away to have a new one made/,
    );
    // and never replaced behind the operator's back
    expect(await readFile(join(dir, "ssh", "ssh_host_ed25519_key"), "utf8")).toBe(pair.private);
  });

  it("a key ssh2 refuses turns the client away and leaves the agent up", async () => {
    const pair = cutPair();
    const errors: string[] = [];
    const log: Logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (msg, fields) => errors.push(`${msg} ${JSON.stringify(fields)}`),
      child: () => log,
    };
    const port = await freePort();
    // the gateway reaches the engine only once a client has logged in; this one never gets that far
    const gateway = new SshGateway({
      docker: {} as never,
      namePrefix: "hk",
      listenHost: "127.0.0.1",
      hostKey: { privateKey: pair.private, publicKey: pair.public, fingerprint: "SHA256:x", path: "" },
      log,
    });
    await gateway.open("pod", port);
    try {
      for (let i = 0; i < 2; i++) {
        const outcome = await new Promise<string>((resolve) => {
          const client = new ssh2.Client();
          client.on("ready", () => resolve("ready"));
          client.on("error", (err) => resolve(`error: ${err.message}`));
          client.on("close", () => resolve("closed"));
          client.connect({ host: "127.0.0.1", port, username: "pod_user", readyTimeout: 10_000 });
        });
        expect(outcome).not.toBe("ready");
      }
      expect(errors.length).toBe(2);
      expect(errors[0]).toMatch(/ssh: cannot serve SSH .*Cannot parse privateKey/);
    } finally {
      await gateway.stop();
    }
  });
});
