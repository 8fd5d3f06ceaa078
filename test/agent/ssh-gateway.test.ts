import { createHash, randomBytes } from "node:crypto";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchDockerEvents } from "../../agent/docker/events";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { LABEL_HELPER } from "../../agent/docker/pod-user";
import { SshGateway, startSshGateway } from "../../agent/ssh/gateway";
import { loadOrCreateHostKey } from "../../agent/ssh/host-key";
import { type Agent, freePort, podSpec, startAgent, until } from "./helpers";
import { type ClientKey, clientOptions, makeKey, run, start, tempDir } from "./ssh-support";

/**
 * The SSH gateway against real pods, driven by Debian's OpenSSH client (ssh, scp, sftp, tmux for a
 * real terminal) and, where OpenSSH cannot ask for it (signals, passwords), by ssh2's client.
 * Two pods share the file: alpha (most tests) and beta (isolation, stopped, deleted).
 */

let agent: Agent;
let dir: string;
let knownHosts: string;
const keys: Record<"a" | "b" | "c" | "inside", ClientKey> = {} as never;
const ports = { alpha: 0, beta: 0 };
const container = (pod: string) => podNames(agent.config.namePrefix, pod).container;
const asPodUser = (pod: string, argv: string[], stdin?: string) =>
  execInContainer(agent.docker, container(pod), argv, { stdin });

const target = "pod_user@127.0.0.1";
const ssh = (port: number, key: ClientKey, args: string[], input?: string | Buffer) =>
  run("ssh", [...clientOptions(knownHosts, key), "-p", String(port), target, ...args], { input });
const KEY_FILE = "/home/pod_user/.ssh/authorized_keys";
/** alpha's authorized_keys replaced by its user over SSH (key a), as a user edits it */
const writeAlphaKeys = async (text: string) => {
  const r = await ssh(
    ports.alpha,
    keys.a,
    [`umask 077; cat > ${KEY_FILE}.new && mv ${KEY_FILE}.new ${KEY_FILE}`],
    text,
  );
  expect(r.code, r.stderr).toBe(0);
};

beforeAll(async () => {
  agent = await startAgent({}, { ssh: true });
  dir = await tempDir();
  knownHosts = join(dir, "known_hosts");
  for (const k of ["a", "b", "c", "inside"] as const) keys[k] = await makeKey(dir, k);
  ports.alpha = await freePort();
  ports.beta = await freePort();
  await Promise.all([
    agent.handlers["pod.create"](podSpec("alpha", { sshPort: ports.alpha }), agent.ctx),
    agent.handlers["pod.create"](
      podSpec("beta", { sshPort: ports.beta, authorizedKeys: [keys.b.publicKey] }),
      agent.ctx,
    ),
  ]);
  expect(
    await agent.handlers["pod.ssh.keys.add"]({ name: "alpha", key: keys.a.publicKey }, agent.ctx),
  ).toEqual({
    added: true,
  });
});

afterAll(async () => {
  await agent?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("pod.keys", () => {
  it("create writes the spec's keys and the gateway listens on the pod's port (a container label)", async () => {
    expect(agent.gateway?.ports()).toEqual({ alpha: ports.alpha, beta: ports.beta });
    const info = await agent.docker.getContainer(container("beta")).inspect();
    expect(info.Config.Labels["podhost.ssh_port"]).toBe(String(ports.beta));
    const listed = await agent.handlers["pod.ssh.keys.list"]({ name: "beta" }, agent.ctx);
    expect(listed.keys).toEqual([keys.b.publicKey]);
  });

  it("add is idempotent by key (comment aside), remove reports absence, the file stays 600 in a 700 dir", async () => {
    const { handlers, ctx } = agent;
    const recommented = keys.c.publicKey.replace(/\S+$/, "another-comment");
    expect(await handlers["pod.ssh.keys.add"]({ name: "alpha", key: keys.c.publicKey }, ctx)).toEqual({
      added: true,
    });
    expect(await handlers["pod.ssh.keys.add"]({ name: "alpha", key: recommented }, ctx)).toEqual({
      added: false,
    });
    expect((await handlers["pod.ssh.keys.list"]({ name: "alpha" }, ctx)).keys).toEqual([
      keys.a.publicKey,
      keys.c.publicKey,
    ]);
    const mode = await asPodUser("alpha", [
      "stat",
      "-c",
      "%a %U",
      "/home/pod_user/.ssh",
      "/home/pod_user/.ssh/authorized_keys",
    ]);
    expect(mode.stdout.trim().split("\n")).toEqual(["700 pod_user", "600 pod_user"]);
    expect(await handlers["pod.ssh.keys.remove"]({ name: "alpha", key: recommented }, ctx)).toEqual({
      removed: true,
    });
    expect(await handlers["pod.ssh.keys.remove"]({ name: "alpha", key: keys.c.publicKey }, ctx)).toEqual({
      removed: false,
    });
    expect((await handlers["pod.ssh.keys.list"]({ name: "alpha" }, ctx)).keys).toEqual([keys.a.publicKey]);
  });

  it("rejects what is not one public key", async () => {
    for (const key of ["not a key", `${keys.c.publicKey}\n${keys.b.publicKey}`, "ssh-ed25519 AAAA"]) {
      await expect(
        agent.handlers["pod.ssh.keys.add"]({ name: "alpha", key }, agent.ctx),
      ).rejects.toMatchObject({
        code: "bad_request",
      });
    }
    await expect(agent.handlers["pod.ssh.keys.list"]({ name: "nope" }, agent.ctx)).rejects.toMatchObject({
      code: "not_found",
    });
  });

  it("keeps comments, options and other lines of a hand-edited file", async () => {
    const file = [
      "# my keys",
      `no-pty,command="echo \\"hi there\\"" ${keys.c.publicKey}`,
      "garbage line",
      keys.a.publicKey,
      "",
    ].join("\n");
    await asPodUser("alpha", ["sh", "-c", "cat > /home/pod_user/.ssh/authorized_keys"], file);
    expect((await agent.handlers["pod.ssh.keys.list"]({ name: "alpha" }, agent.ctx)).keys).toEqual([
      `no-pty,command="echo \\"hi there\\"" ${keys.c.publicKey}`,
      keys.a.publicKey,
    ]);
    // the key behind options authenticates too, and its options apply: the forced command answers
    expect((await ssh(ports.alpha, keys.c, ["whoami"])).stdout.toString()).toBe("hi there\n");
    await agent.handlers["pod.ssh.keys.remove"]({ name: "alpha", key: keys.c.publicKey }, agent.ctx);
    const after = await asPodUser("alpha", ["cat", "/home/pod_user/.ssh/authorized_keys"]);
    expect(after.stdout).toBe(["# my keys", "garbage line", keys.a.publicKey, ""].join("\n"));
  });
});

describe("ssh", () => {
  it("runs a command as pod_user in the home directory, with exit status, stderr and binary stdin", async () => {
    const r = await ssh(ports.alpha, keys.a, ["whoami; pwd; echo err >&2; exit 7"]);
    expect(r.stdout.toString()).toBe("pod_user\n/home/pod_user\n");
    expect(r.stderr).toBe("err\n");
    expect(r.code).toBe(7);
    // a terminal on request for a command too (the client's stdin is no terminal: default size)
    const tty = await ssh(ports.alpha, keys.a, ["-tt", "tty; stty size"]);
    expect(tty.stdout.toString()).toMatch(/^\/dev\/pts\/\d+\r\n24 80\r\n$/);
    const data = randomBytes(256 * 1024);
    const sum = await ssh(ports.alpha, keys.a, ["sha256sum"], data);
    expect(sum.stdout.toString().split(" ")[0]).toBe(createHash("sha256").update(data).digest("hex"));
  });

  it("runs a command without a terminal with the container's own isolation (the runc fast path)", async () => {
    const status = await ssh(ports.alpha, keys.a, [
      "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/cgroup; cat /proc/1/cgroup",
    ]);
    expect(status.code).toBe(0);
    const out = status.stdout.toString();
    expect(out).toMatch(/^CapEff:\s+0{16}$/m);
    expect(out).toMatch(/^CapBnd:\s+0{16}$/m);
    expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(out).toMatch(/^Seccomp:\s+2$/m);
    // the same cgroups as the container's init: its memory, CPU and pids limits hold
    const lines = out.split("\n").filter((l) => /^\d+:/.test(l));
    const half = lines.length / 2;
    expect(lines.slice(0, half)).toEqual(lines.slice(half));
    const info = await agent.docker.getContainer(container("alpha")).inspect();
    expect(lines.some((l) => l.includes(info.Id))).toBe(true);
    // and it really went around the engine: the engine knows no exec of it
    expect(info.ExecIDs ?? []).toHaveLength(0);
  });

  it("gives an interactive shell a real terminal that follows the window size", async () => {
    const socket = `podhost-test-${process.pid}`;
    const tmux = (...args: string[]) => run("tmux", ["-L", socket, "-f", "/dev/null", ...args]);
    const screen = async () => (await tmux("capture-pane", "-p", "-t", "t")).stdout.toString();
    try {
      const cmd = ["ssh", ...clientOptions(knownHosts, keys.a), "-tt", "-p", String(ports.alpha), target];
      expect((await tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "25", ...cmd)).code).toBe(0);
      await tmux("set-option", "-g", "status", "off"); // the pane is then the whole 25 rows
      expect(await until(async () => /pod_user@alpha:~\$/.test(await screen()))).toBe(true);
      await tmux("send-keys", "-t", "t", "tty; stty size; echo $TERM", "Enter");
      expect(await until(async () => /\/dev\/pts\/\d+\s+25 80\s+\S+/.test(await screen()))).toBe(true);
      await tmux("resize-window", "-t", "t", "-x", "100", "-y", "30");
      await tmux("send-keys", "-t", "t", "clear; stty size", "Enter");
      expect(await until(async () => /^30 100$/m.test(await screen()))).toBe(true);
      await tmux("send-keys", "-t", "t", "exit", "Enter");
      expect(await until(async () => (await tmux("has-session", "-t", "t")).code !== 0)).toBe(true);
    } finally {
      await tmux("kill-server");
    }
  });

  it("copies 16 MB both ways byte for byte with scp (legacy and SFTP) and sftp, over AES-GCM", async () => {
    const data = randomBytes(16 * 1024 * 1024);
    const src = join(dir, "big.bin");
    await writeFile(src, data);
    const hex = createHash("sha256").update(data).digest("hex");
    // debug1 output names the cipher each direction negotiated: the bulk bytes go through one AEAD pass
    const options = clientOptions(knownHosts, keys.a, { LogLevel: "DEBUG1" });
    const aead = (r: { code: number | null; stderr: string }) => {
      expect(r.code, r.stderr.slice(-2000)).toBe(0);
      const ciphers = [...r.stderr.matchAll(/kex: (?:client->server|server->client) cipher: (\S+)/g)];
      expect(ciphers.map((m) => m[1])).toEqual(["aes128-gcm@openssh.com", "aes128-gcm@openssh.com"]);
    };
    const scp = (...args: string[]) =>
      run("scp", [...options, "-P", String(ports.alpha), ...args], { timeoutMs: 120_000 });
    const sumInPod = async (name: string) =>
      (await asPodUser("alpha", ["sha256sum", `/home/pod_user/${name}`])).stdout.split(" ")[0];
    for (const mode of ["-O", "-s"]) {
      aead(await scp(mode, src, `${target}:big${mode}.bin`));
      expect(await sumInPod(`big${mode}.bin`)).toBe(hex);
      const back = join(dir, `back${mode}.bin`);
      aead(await scp(mode, `${target}:big${mode}.bin`, back));
      expect(
        createHash("sha256")
          .update(await readFile(back))
          .digest("hex"),
      ).toBe(hex);
    }
    const batch = join(dir, "put-batch");
    await writeFile(batch, `put ${src} big-sftp.bin\n`);
    aead(
      await run("sftp", [...options, "-b", batch, "-P", String(ports.alpha), target], { timeoutMs: 120_000 }),
    );
    expect(await sumInPod("big-sftp.bin")).toBe(hex);
    await asPodUser("alpha", [
      "rm",
      "-f",
      "/home/pod_user/big-O.bin",
      "/home/pod_user/big-s.bin",
      "/home/pod_user/big-sftp.bin",
    ]);
  });

  it("negotiates AES-GCM with a client that offers it anywhere in its list, AES-CTR with one that does not", async () => {
    // `ssh -v` prints the cipher each direction negotiated
    const cipherOf = async (options: Record<string, string>) => {
      const r = await run("ssh", [
        ...clientOptions(knownHosts, keys.a, { LogLevel: "DEBUG1", ...options }),
        "-p",
        String(ports.alpha),
        target,
        "echo fine",
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.toString()).toBe("fine\n");
      const ciphers = [...r.stderr.matchAll(/kex: (client->server|server->client) cipher: (\S+)/g)];
      expect(ciphers.map((m) => m[1]).sort()).toEqual(["client->server", "server->client"]);
      return [...new Set(ciphers.map((m) => m[2]))];
    };
    // OpenSSH's own order (chacha20-poly1305 first, AES-CTR before AES-GCM)
    expect(await cipherOf({})).toEqual(["aes128-gcm@openssh.com"]);
    expect(await cipherOf({ Ciphers: "aes256-ctr,aes256-gcm@openssh.com" })).toEqual([
      "aes256-gcm@openssh.com",
    ]);
    // no AES-GCM: the client's first choice the gateway has, as before
    expect(await cipherOf({ Ciphers: "chacha20-poly1305@openssh.com,aes192-ctr,aes128-ctr" })).toEqual([
      "aes192-ctr",
    ]);
  });

  it("serves sftp: list and remove a file in batch mode", async () => {
    await asPodUser("alpha", ["sh", "-c", "echo hi > /home/pod_user/gone.txt"]);
    const batch = join(dir, "batch");
    await writeFile(batch, "ls -1\nrm gone.txt\nls -1\n");
    const r = await run("sftp", [
      ...clientOptions(knownHosts, keys.a),
      "-b",
      batch,
      "-P",
      String(ports.alpha),
      target,
    ]);
    expect(r.code).toBe(0);
    const out = r.stdout.toString();
    expect(out.match(/^gone\.txt$/gm)).toHaveLength(1); // listed once: before the rm
    expect(out).toContain("app");
    expect((await asPodUser("alpha", ["test", "-e", "/home/pod_user/gone.txt"])).exitCode).toBe(1);
  });

  it("accepts a key added over SSH at once, and one added by other means within a second", async () => {
    expect((await ssh(ports.alpha, keys.inside, ["true"])).code).toBe(255);
    const added = await ssh(ports.alpha, keys.a, [`cat >> ${KEY_FILE}`], `${keys.inside.publicKey}\n`);
    expect(added.code).toBe(0);
    const r = await ssh(ports.alpha, keys.inside, ["whoami"]);
    expect(r.stdout.toString()).toBe("pod_user\n");
    // a change the gateway does not see happen (the Files API, exec): the file's identity, checked
    // at the first login a second after the last check, says it changed
    await asPodUser("alpha", ["sh", "-c", `grep -v inside@test ${KEY_FILE} > k; cat k > ${KEY_FILE}; rm k`]);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await ssh(ports.alpha, keys.inside, ["true"])).code).toBe(255);
    await asPodUser("alpha", ["sh", "-c", `cat >> ${KEY_FILE}`], `${keys.inside.publicKey}\n`);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await ssh(ports.alpha, keys.inside, ["true"])).code).toBe(0);
  });

  it("never lets one pod's key into another pod", async () => {
    const wrong = await ssh(ports.alpha, keys.b, ["whoami"]);
    expect(wrong.code).toBe(255);
    expect(wrong.stderr).toContain("Permission denied (publickey)");
    expect((await ssh(ports.beta, keys.a, ["whoami"])).code).toBe(255);
    expect((await ssh(ports.beta, keys.b, ["hostname"])).stdout.toString()).toBe("beta\n");
  });

  it("ignores a planted symlink: authorized_keys is read as pod_user", async () => {
    // /etc/shadow is root's: pod_user cannot read it, so neither can the gateway on its behalf.
    const planted = await ssh(ports.beta, keys.b, [
      "cd ~/.ssh && ln -sf /etc/shadow evil && cp authorized_keys keep && ln -sf evil authorized_keys",
    ]);
    expect(planted.code, planted.stderr).toBe(0);
    try {
      expect((await ssh(ports.beta, keys.b, ["true"])).code).toBe(255);
      await expect(agent.handlers["pod.ssh.keys.list"]({ name: "beta" }, agent.ctx)).rejects.toMatchObject({
        code: "internal",
      });
    } finally {
      await asPodUser("beta", ["sh", "-c", "cd ~/.ssh && mv -f keep authorized_keys && rm -f evil"]);
    }
    expect((await ssh(ports.beta, keys.b, ["true"])).code).toBe(0);
  });

  it("offers public keys only: passwords and keyboard-interactive are refused", async () => {
    const r = await run("ssh", [
      ...clientOptions(knownHosts, keys.a, {
        PubkeyAuthentication: "no",
        PreferredAuthentications: "password,keyboard-interactive",
      }),
      "-p",
      String(ports.alpha),
      target,
      "true",
    ]);
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("Permission denied (publickey)");
    // a client that sends a password anyway
    const err = await new Promise<Error & { level?: string }>((resolve) => {
      const c = new ssh2.Client();
      c.on("ready", () => {
        c.end();
        resolve(Object.assign(new Error("let in"), { level: "none" }));
      });
      c.on("error", (e) => {
        c.end();
        resolve(e);
      });
      c.connect({
        host: "127.0.0.1",
        port: ports.alpha,
        username: "pod_user",
        password: "hunter2",
        tryKeyboard: true,
        authHandler: ["password", "keyboard-interactive"],
      });
    });
    expect(err.level).toBe("client-authentication");
  });

  it("opens at most 10 sessions at once on one connection", async () => {
    const client = new ssh2.Client();
    await new Promise<void>((resolve, reject) => {
      client.on("ready", resolve).on("error", reject);
      void readFile(keys.a.path, "utf8").then((privateKey) =>
        client.connect({
          host: "127.0.0.1",
          port: ports.alpha,
          username: "pod_user",
          privateKey,
          hostVerifier: () => true,
        }),
      );
    });
    try {
      const open = () =>
        new Promise<ssh2.ClientChannel | Error>((resolve) =>
          client.exec("sleep 2", (err, channel) => resolve(err ?? channel)),
        );
      const opened = [];
      for (let i = 0; i < 10; i++) opened.push(await open());
      expect(opened.filter((c) => c instanceof Error)).toEqual([]);
      const eleventh = await open();
      expect(eleventh).toBeInstanceOf(Error);
      // they end: there is room again
      await Promise.all(
        opened.map((c) => new Promise((r) => (c as ssh2.ClientChannel).once("close", r).resume())),
      );
      const again = await open();
      expect(again).not.toBeInstanceOf(Error);
    } finally {
      client.end();
    }
  });

  it("refuses port forwarding both ways", async () => {
    const remote = await ssh(ports.alpha, keys.a, [
      "-N",
      "-o",
      "ExitOnForwardFailure=yes",
      "-R",
      "0:127.0.0.1:9",
    ]);
    expect(remote.code).toBe(255);
    expect(remote.stderr).toMatch(/remote port forwarding failed/i);

    const local = await freePort();
    const fwd = start("ssh", [
      ...clientOptions(knownHosts, keys.a, { LogLevel: "INFO" }),
      "-N",
      "-L",
      `${local}:127.0.0.1:8080`,
      "-p",
      String(ports.alpha),
      target,
    ]);
    const received = await until(
      () =>
        new Promise<string | null>((resolve) => {
          const s = connect(local, "127.0.0.1");
          let got = "";
          s.on("data", (b) => (got += b.toString()));
          s.on("error", () => resolve(null));
          s.on("close", () => resolve(`closed:${got}`));
          s.on("connect", () => s.write("GET / HTTP/1.0\r\n\r\n"));
        }),
    );
    expect(received).toBe("closed:"); // the tunnel opened nothing: no response at all
    fwd.child.kill("SIGTERM");
    const done = await fwd.done;
    expect(done.stderr).toMatch(/open failed|prohibited/i);
  });

  it("hangs up what runs when the client goes away", async () => {
    const client = start("ssh", [
      ...clientOptions(knownHosts, keys.a),
      "-p",
      String(ports.alpha),
      target,
      "sleep 300",
    ]);
    const running = async () => (await asPodUser("alpha", ["pgrep", "-x", "sleep"])).exitCode === 0;
    expect(await until(running)).toBe(true);
    client.child.kill("SIGKILL"); // the connection drops without a word
    await client.done;
    expect(await until(async () => !(await running()))).toBe(true);
  });

  it("forwards a signal to the command and reports it as the exit signal", async () => {
    const exit = await new Promise<{ code: number | null; signal?: string }>((resolve, reject) => {
      const c = new ssh2.Client();
      c.on("error", reject);
      c.on("ready", () => {
        c.exec("sleep 30", (err, ch) => {
          if (err) return reject(err);
          ch.on("exit", (code: number | null, signal?: string) => resolve({ code, signal }));
          ch.on("close", () => c.end());
          ch.resume();
          setTimeout(() => ch.signal("TERM"), 500);
        });
      });
      void readFile(keys.a.path).then((privateKey) =>
        c.connect({ host: "127.0.0.1", port: ports.alpha, username: "pod_user", privateKey }),
      );
    });
    expect(exit).toEqual({ code: null, signal: "SIGTERM" }); // ssh2's client names it with the prefix
    expect((await asPodUser("alpha", ["pgrep", "-x", "sleep"])).exitCode).toBe(1);
  });

  it("refuses a key removed with pod.ssh.keys.remove on the next connection", async () => {
    expect((await ssh(ports.alpha, keys.inside, ["true"])).code).toBe(0);
    expect(
      await agent.handlers["pod.ssh.keys.remove"]({ name: "alpha", key: keys.inside.publicKey }, agent.ctx),
    ).toEqual({ removed: true });
    const r = await ssh(ports.alpha, keys.inside, ["true"]);
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("Permission denied (publickey)");
  });

  it("applies the options of the key's line: from=, expiry-time=, no-pty, restrict, command=", async () => {
    const before = (await asPodUser("alpha", ["cat", KEY_FILE])).stdout;
    // key c's lines, after alpha's own (written by the user over SSH)
    const lines = (...ls: string[]) => writeAlphaKeys(`${before}${ls.map((l) => `${l}\n`).join("")}`);
    const c = keys.c.publicKey;
    // from 127.0.0.2: its failed logins are counted apart from the other tests' 127.0.0.1
    const asC = (args: string[]) =>
      run("ssh", [
        ...clientOptions(knownHosts, keys.c, { BindAddress: "127.0.0.2" }),
        "-p",
        String(ports.alpha),
        target,
        ...args,
      ]);
    const denied = async () => {
      const r = await asC(["true"]);
      expect(r.code).toBe(255);
      expect(r.stderr).toContain("Permission denied (publickey)");
    };
    try {
      await lines(`from="127.0.0.1" ${c}`);
      await denied();
      await lines(`from="127.0.0.0/8,!127.0.0.2" ${c}`);
      await denied();
      await lines(`expiry-time="20000101" ${c}`);
      await denied();
      await lines(`no-such-option ${c}`);
      await denied();
      await lines(`from="127.0.0.2,::1",expiry-time="29991231" ${c}`);
      expect((await asC(["whoami"])).stdout.toString()).toBe("pod_user\n");

      // The first line that lets the client in counts: here the second one, without a terminal.
      // OpenSSH gives up when a terminal it insisted on (-tt) is refused; without one all is well.
      const refusesTerminal = async () => {
        const r = await asC(["-tt", "tty"]);
        expect(r.stderr).toContain("PTY allocation request failed");
        expect(r.stdout.toString()).toBe("");
        expect((await asC(["whoami"])).stdout.toString()).toBe("pod_user\n");
      };
      await lines(`from="127.0.0.1" ${c}`, `no-pty ${c}`);
      await refusesTerminal();
      await lines(`restrict ${c}`);
      await refusesTerminal();
      await lines(`restrict,pty ${c}`);
      expect((await asC(["-tt", "tty"])).stdout.toString()).toMatch(/^\/dev\/pts\/\d+\r\n$/);

      await lines(`command="echo \\"forced: $SSH_ORIGINAL_COMMAND\\"; exit 3" ${c}`);
      const forced = await asC(["whoami"]);
      expect(forced.stdout.toString()).toBe("forced: whoami\n");
      expect(forced.code).toBe(3);
      expect((await asC([])).stdout.toString()).toBe("forced: \n"); // a shell, without a command
      const sftp = await run(
        "sftp",
        [
          ...clientOptions(knownHosts, keys.c, { BindAddress: "127.0.0.2" }),
          "-b",
          "-",
          "-P",
          String(ports.alpha),
          target,
        ],
        {
          input: "ls\n",
        },
      );
      expect(sftp.code).not.toBe(0); // the forced command answers instead of sftp-server
      // alpha's own key has no options: unaffected
      expect((await ssh(ports.alpha, keys.a, ["-tt", "tty"])).stdout.toString()).toMatch(/^\/dev\/pts\//);
    } finally {
      await lines();
    }
  });

  it("matches a hostile from= pattern (200 stars) without stalling the agent for its other work", async () => {
    const before = (await asPodUser("alpha", ["cat", KEY_FILE])).stdout;
    const write = writeAlphaKeys;
    // A RegExp built from this pattern backtracked for minutes on "127.0.0.3" (the gateway's thread is
    // the agent's only one). 127.0.0.3: this test's refused logins are counted apart from the others'.
    await write(`${before}from="${"*".repeat(200)}x" ${keys.c.publicKey}\n`);
    const lags: number[] = [];
    let attempting = true;
    const pinging = (async () => {
      while (attempting) {
        const t0 = performance.now();
        await new Promise((r) => setTimeout(r, 10));
        expect(await agent.handlers["host.ping"]({}, agent.ctx)).toEqual({ pong: true });
        lags.push(performance.now() - t0 - 10);
      }
    })();
    try {
      const r = await run("ssh", [
        ...clientOptions(knownHosts, keys.c, { BindAddress: "127.0.0.3" }),
        "-p",
        String(ports.alpha),
        target,
        "true",
      ]);
      expect(r.code).toBe(255);
      expect(r.stderr).toContain("Permission denied (publickey)");
    } finally {
      attempting = false;
      await pinging;
      await write(before);
    }
    expect(lags.length).toBeGreaterThan(0);
    expect(Math.max(...lags)).toBeLessThan(100);
  });
});

describe("a gateway with tight limits", () => {
  let gateway: SshGateway;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    gateway = new SshGateway({
      docker: agent.docker,
      namePrefix: agent.config.namePrefix,
      listenHost: "127.0.0.1",
      hostKey: await loadOrCreateHostKey(agent.stateDir),
      log: agent.log,
      idleTimeoutMs: 1_500,
      authLimit: { maxFailures: 3, windowMs: 60_000, blockMs: 60_000 },
    });
    await gateway.open("alpha", port);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it("logs and survives a port that is taken", async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    const taken = (busy.address() as { port: number }).port;
    try {
      await gateway.open("beta", taken);
      expect(gateway.ports()).toEqual({ alpha: port });
    } finally {
      await gateway.close("beta");
      busy.close();
    }
  });

  it("checks no keys for a stranger's connection before it tries one; for an address that logged in, as it connects", async () => {
    const checks = () => gateway.loginWork().keyChecks;
    const keyscan = async () =>
      expect((await run("ssh-keyscan", ["-p", String(port), "127.0.0.1"])).stdout.toString()).toContain(
        "ssh-ed25519",
      );
    // a key exchange and no key tried (ssh-keyscan): nothing is started in the pod
    const before = checks();
    await keyscan();
    await new Promise((r) => setTimeout(r, 500));
    expect(checks()).toBe(before);
    // after a login from this address (its session marks the copy stale), its next connection gets
    // the pod's keys checked beside the key exchange, before it tries a key
    expect((await ssh(port, keys.a, ["true"])).code).toBe(0);
    const loggedIn = checks();
    expect(loggedIn).toBeGreaterThan(before);
    await keyscan();
    expect(await until(async () => checks() > loggedIn, 5_000, 50)).toBe(true);
  });

  it("closes a connection idle for longer than the timeout", async () => {
    const t0 = performance.now();
    const r = await ssh(port, keys.a, ["sleep 20"]);
    expect(r.code).toBe(255);
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it("refuses an address after too many failed logins, even with a good key", async () => {
    for (let i = 0; i < 3; i++) expect((await ssh(port, keys.b, ["true"])).code).toBe(255);
    const blocked = await ssh(port, keys.a, ["true"]);
    expect(blocked.code).toBe(255);
    expect(blocked.stderr).not.toContain("Permission denied");
    // the agent's own gateway keeps its own count
    expect((await ssh(ports.alpha, keys.a, ["true"])).code).toBe(0);
  });

  it("counts a failed login at its first refusal, while the connection is still open", async () => {
    // Each connection offers a wrong key, is refused, then holds on without trying again: counted at
    // the close, these would never get the address blocked.
    const wrongKey = await readFile(keys.b.path, "utf8");
    const held: ssh2.Client[] = [];
    const refusedOnce = () =>
      new Promise<void>((resolve, reject) => {
        const client = new ssh2.Client();
        held.push(client);
        let offered = false;
        client.on("error", () => undefined);
        client.on("ready", () => reject(new Error("logged in with a wrong key")));
        client.connect({
          host: "127.0.0.1",
          port,
          localAddress: "127.0.0.4",
          username: "pod_user",
          hostVerifier: () => true,
          authHandler: (_methods, _partial, next) => {
            if (offered) return resolve(); // refused: hold on, never answer
            offered = true;
            next({ type: "publickey", username: "pod_user", key: wrongKey });
          },
        });
      });
    try {
      for (let i = 0; i < 3; i++) await refusedOnce();
      const blocked = await run("ssh", [
        ...clientOptions(knownHosts, keys.a, { BindAddress: "127.0.0.4" }),
        "-p",
        String(port),
        target,
        "true",
      ]);
      expect(blocked.code).toBe(255);
      expect(blocked.stderr).not.toContain("Permission denied");
    } finally {
      for (const c of held) c.end();
    }
  });
});

describe("pod state", () => {
  const watching = new AbortController();
  beforeAll(() => {
    // the agent's events watcher tells the gateway which pods run, as in main.ts
    void watchDockerEvents(agent, { podStatus: () => undefined }, watching.signal);
  });
  afterAll(() => watching.abort());

  it("a stopped pod: logins are refused without a call to the engine, keys are still managed", async () => {
    await agent.handlers["pod.stop"]({ name: "beta" }, agent.ctx);
    const gateway = agent.gateway as SshGateway;
    await until(async () => (await ssh(ports.beta, keys.b, ["true"])).stderr.includes("Permission denied"));
    const before = gateway.loginWork();
    const r = await ssh(ports.beta, keys.b, ["true"]);
    expect(r.stderr).toContain("Permission denied (publickey)");
    expect(r.code).toBe(255);
    expect(gateway.loginWork()).toEqual(before);
    expect(
      await agent.handlers["pod.ssh.keys.add"]({ name: "beta", key: keys.c.publicKey }, agent.ctx),
    ).toEqual({
      added: true,
    });
    expect((await agent.handlers["pod.ssh.keys.list"]({ name: "beta" }, agent.ctx)).keys).toEqual([
      keys.b.publicKey,
      keys.c.publicKey,
    ]);
    // the stopped pod's files were reached through short-lived helpers, all gone again
    const helpers = await agent.docker.listContainers({ all: true, filters: { label: [LABEL_HELPER] } });
    expect(helpers.filter((c) => c.Labels[LABEL_HELPER] === "beta")).toEqual([]);
  });

  it("delete closes the pod's port", async () => {
    await agent.handlers["pod.delete"]({ name: "beta" }, agent.ctx);
    expect(agent.gateway?.ports()).toEqual({ alpha: ports.alpha });
    const r = await ssh(ports.beta, keys.b, ["true"]);
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("Connection refused");
  });

  it("keeps the host key and the pods' ports across a restart of the gateway", async () => {
    const scan = async (port: number) =>
      (await run("ssh-keyscan", ["-p", String(port), "127.0.0.1"])).stdout.toString();
    const before = await scan(ports.alpha);
    expect(before).toContain("ssh-ed25519");
    const keyFile = join(agent.stateDir, "ssh", "ssh_host_ed25519_key");
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    await agent.gateway?.stop();
    // a new gateway, as at the agent's start: same state dir, listeners from the containers' labels
    const again = await startSshGateway({
      docker: agent.docker,
      namePrefix: agent.config.namePrefix,
      listenHost: "127.0.0.1",
      stateDir: agent.stateDir,
      log: agent.log,
    });
    try {
      expect(again.ports()).toEqual({ alpha: ports.alpha });
      expect(await scan(ports.alpha)).toBe(before);
      // known_hosts from before the restart is still good under strict checking
      const r = await run("ssh", [
        ...clientOptions(knownHosts, keys.a, { StrictHostKeyChecking: "yes" }),
        "-p",
        String(ports.alpha),
        target,
        "whoami",
      ]);
      expect(r.stdout.toString()).toBe("pod_user\n");
    } finally {
      await again.stop();
    }
  });
});
