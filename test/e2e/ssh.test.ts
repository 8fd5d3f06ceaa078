import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_NODE_FLAGS } from "../../scripts/build-agent";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type ClientKey, hostKeyOf, makeKey, sshRun } from "./support/ssh";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

describe("SSH through the public API and the host's gateway, with OpenSSH's client", () => {
  let stack: Stack;
  let alice: User;
  let knownHosts: string;
  let podKey: ClientKey;
  let accountKey: ClientKey;
  const names = { before: "", after: "", other: "" };
  const ports: Record<string, number> = {};
  /** the agent's last log lines, so a refused login in CI says why */
  const agentTail = () => stack.agent.output.slice(-15).join("");

  const createRunning = async (name: string) => {
    Object.assign(ports, await createRunningPods(alice.api, [[name, "static"]]));
  };

  beforeAll(async () => {
    stack = await startStack("ssh");
    alice = await signUp(stack.api, "Alice");
    knownHosts = path.join(await mkdtemp(path.join(tmpdir(), "podhost-kh-")), "known_hosts");
    [podKey, accountKey] = await Promise.all([makeKey("pod@e2e"), makeKey("account@e2e")]);
    const tag = stack.prefix.slice(-4);
    names.before = `ssh-before-${tag}`;
    names.after = `ssh-after-${tag}`;
    names.other = `ssh-other-${tag}`;
    await waitForHostOnline(alice.api);
    await createRunning(names.before);
    await createRunning(names.other);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it("tells how to connect", async () => {
    const res = await alice.api.get(`/api/pods/${names.before}/ssh`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: "pod_user",
      host: "127.0.0.1",
      port: ports[names.before],
      ssh_ready: true,
      command: `ssh -p ${ports[names.before]} pod_user@127.0.0.1`,
    });
  });

  it("logs in with a key added through the API, as pod_user", async () => {
    const port = ports[names.before] ?? 0;
    expect((await sshRun(podKey, port, "whoami", knownHosts)).code).not.toBe(0);
    const added = await alice.api.post(`/api/pods/${names.before}/ssh/keys`, { key: podKey.publicKey });
    expect(added.status).toBe(201);
    const again = await alice.api.post(`/api/pods/${names.before}/ssh/keys`, { key: podKey.publicKey });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ message: "key already exists" });
    const listed = await alice.api.get(`/api/pods/${names.before}/ssh/keys`);
    expect(listed.body.keys).toHaveLength(1);

    const session = await sshRun(podKey, port, "whoami && pwd", knownHosts);
    expect(session.code, `${session.stderr}\nagent: ${agentTail()}`).toBe(0);
    expect(session.stdout.split("\n")).toEqual(["pod_user", "/home/pod_user", ""]);
  });

  it("never opens another pod with that pod's key", async () => {
    const res = await sshRun(podKey, ports[names.other] ?? 0, "whoami", knownHosts);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/Permission denied/);
  });

  it("installs an auto_inject account key into pods created afterwards, not before", async () => {
    const stored = await alice.api.post("/api/ssh-keys", {
      public_key: accountKey.publicKey,
      auto_inject: true,
    });
    expect(stored.status).toBe(201);
    expect(stored.body).toMatchObject({ name: "account@e2e", auto_inject: true });
    expect(stored.body.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect((await alice.api.post("/api/ssh-keys", { public_key: accountKey.publicKey })).status).toBe(409);

    await createRunning(names.after);
    const onNew = await sshRun(accountKey, ports[names.after] ?? 0, "whoami", knownHosts);
    expect(onNew.code, `${onNew.stderr}\nagent: ${agentTail()}`).toBe(0);
    expect(onNew.stdout.trim()).toBe("pod_user");
    const onOld = await sshRun(accountKey, ports[names.before] ?? 0, "whoami", knownHosts);
    expect(onOld.code).not.toBe(0);
  });

  it("syncs files with rsync -e ssh", async () => {
    const { execFile } = await import("node:child_process");
    const { mkdtemp: mkd, writeFile } = await import("node:fs/promises");
    const dir = await mkd(path.join(tmpdir(), "podhost-rsync-"));
    await writeFile(path.join(dir, "hello.txt"), "synced by rsync\n");
    const port = ports[names.after] ?? 0;
    const sshCommand = `ssh -p ${port} -i ${accountKey.privatePath} -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=accept-new`;
    const code = await new Promise<number>((resolve) => {
      const child = execFile(
        "rsync",
        ["-a", "-e", sshCommand, `${dir}/`, "pod_user@127.0.0.1:app/synced/"],
        (error) => resolve(error ? ((error as { code?: number }).code ?? 1) : 0),
      );
      child.stdin?.end();
    });
    expect(code).toBe(0);
    const read = await sshRun(accountKey, port, "cat app/synced/hello.txt", knownHosts);
    expect(read.stdout).toBe("synced by rsync\n");
  });

  it("copies 8 MB both ways with scp (SFTP) over AES-GCM, byte for byte, through the agent as it ships", async () => {
    // the agent's process runs with the shipped Node flags (its garbage collector's among them: a
    // bulk copy is what they were chosen for)
    const argv = (await readFile(`/proc/${stack.agent.child.pid}/cmdline`, "utf8")).split("\0");
    for (const flag of AGENT_NODE_FLAGS) expect(argv).toContain(flag);
    const dir = await mkdtemp(path.join(tmpdir(), "podhost-scp-"));
    const data = randomBytes(8 * 1024 * 1024);
    const hex = createHash("sha256").update(data).digest("hex");
    await writeFile(path.join(dir, "big.bin"), data);
    const port = ports[names.after] ?? 0;
    const scp = (from: string, to: string) =>
      new Promise<string>((resolve, reject) => {
        const args = ["-P", String(port), "-i", accountKey.privatePath, "-o", "IdentitiesOnly=yes"];
        args.push("-o", "BatchMode=yes", "-o", `UserKnownHostsFile=${knownHosts}`);
        args.push("-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=DEBUG1", from, to);
        execFile("scp", args, { timeout: 120_000 }, (error, _stdout, stderr) =>
          error ? reject(new Error(`scp: ${stderr.slice(-2000)}\n${agentTail()}`)) : resolve(stderr),
        );
      });
    const ciphers = (stderr: string) =>
      [...stderr.matchAll(/kex: (?:client->server|server->client) cipher: (\S+)/g)].map((m) => m[1]);
    expect(ciphers(await scp(path.join(dir, "big.bin"), "pod_user@127.0.0.1:big.bin"))).toEqual([
      "aes128-gcm@openssh.com",
      "aes128-gcm@openssh.com",
    ]);
    const inPod = await sshRun(accountKey, port, "sha256sum big.bin", knownHosts);
    expect(inPod.stdout.split(" ")[0]).toBe(hex);
    await scp("pod_user@127.0.0.1:big.bin", path.join(dir, "back.bin"));
    expect(
      createHash("sha256")
        .update(await readFile(path.join(dir, "back.bin")))
        .digest("hex"),
    ).toBe(hex);
    await sshRun(accountKey, port, "rm -f big.bin", knownHosts);
  });

  it("refuses a key deleted through the API on the next connection", async () => {
    const port = ports[names.before] ?? 0;
    const removed = await alice.api.delete(`/api/pods/${names.before}/ssh/keys`, { key: podKey.publicKey });
    expect(removed.status).toBe(200);
    expect((await sshRun(podKey, port, "whoami", knownHosts)).code).not.toBe(0);
    const gone = await alice.api.delete(`/api/pods/${names.before}/ssh/keys`, { key: podKey.publicKey });
    expect(gone.status).toBe(404);
    const events = await alice.api.get(`/api/pods/${names.before}/events`);
    const types = events.body.events.map((e: { type: string }) => e.type);
    expect(types).toContain("ssh_key_added");
    expect(types).toContain("ssh_key_removed");
  });

  it("keeps the same host key after the agent restarts", async () => {
    const port = ports[names.after] ?? 0;
    const before = await hostKeyOf(port);
    expect(before).toMatch(/^ssh-ed25519 /);
    await stack.agent.stop();
    await stack.startAgent();
    const after = await waitFor(
      "the gateway back",
      async () => (await hostKeyOf(port).catch(() => "")) || undefined,
      30_000,
    );
    expect(after).toBe(before);
    const res = await sshRun(accountKey, port, "true", knownHosts);
    expect(res.code, `${res.stderr}\nagent: ${agentTail()}`).toBe(0);
  });
});
