import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "../../scripts/build-cli";
import { startGitServer } from "../support/git-server";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { waitForHostOnline } from "./support/pods";
import { type Stack, sleep, startStack, waitFor } from "./support/stack";

/**
 * The `podhost` CLI (docs/cli.md) as a user runs it: the built bundle, in a child process without a
 * terminal, against the real Worker + agent + Docker. One stack for the whole file.
 */

type User = Awaited<ReturnType<typeof signUp>>;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("podhost CLI", () => {
  let stack: Stack;
  let alice: User;
  let bundle: string;
  let home: string;
  let configHome: string;

  /** Runs the CLI with no terminal (stdin closed) and a config directory of this test file's. */
  const spawnCli = (
    args: string[],
    opts: { cwd?: string; env?: Record<string, string | undefined> } = {},
  ) => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      XDG_CONFIG_HOME: configHome,
      HOME: home,
      PODHOST_API: stack.api,
      PODHOST_TOKEN: undefined,
      NO_COLOR: "1",
      ...opts.env,
    };
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    return spawn(process.execPath, [bundle, ...args], {
      cwd: opts.cwd ?? home,
      env: env as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
  };
  const collect = (child: ChildProcess): Promise<Run> =>
    new Promise((resolve) => {
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr?.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  const cli = (args: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}) =>
    collect(spawnCli(args, opts));
  /** As alice, through PODHOST_TOKEN (what CI does). */
  const asAlice = (args: string[], cwd?: string) => cli(args, { cwd, env: { PODHOST_TOKEN: alice.token } });
  const json = (run: Run) => {
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout);
  };
  const page = (pod: string) =>
    httpGet(stack.edgePort, `${pod}.pods.localhost`, "/").catch(() => ({ status: 0, body: "" }));

  beforeAll(async () => {
    bundle = await buildCli();
    // OAuth's issuer is PUBLIC_URL: the CLI must talk to that very address
    stack = await startStack("cli", { publicUrl: true });
    alice = await signUp(stack.api, "Alice");
    home = await mkdtemp(path.join(tmpdir(), "podhost-cli-home-"));
    configHome = path.join(home, "config");
    await waitForHostOnline(alice.api);
  });

  afterAll(async () => {
    await stack?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("prints its version, refuses bad usage with 2 and never waits on a prompt without a terminal", async () => {
    const version = await cli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect((await cli(["no-such-command"])).code).toBe(2);
    const started = Date.now();
    const rm = await asAlice(["pods", "rm", "some-pod"]);
    expect(rm.code).toBe(2);
    expect(rm.stderr).toContain("--yes");
    expect(Date.now() - started).toBeLessThan(10_000);
    const signedOut = await cli(["pods", "ls", "--json"]);
    expect(signedOut.code).toBe(4);
    expect(JSON.parse(signedOut.stdout)).toMatchObject({ exit_code: 4 });
  });

  it("logs in with a device code confirmed in a signed-in browser, stores it 0600, and logout revokes it", {
    timeout: 90_000,
  }, async () => {
    const child = spawnCli(["login", "--device", "--json"]);
    const done = collect(child);
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await waitFor(
      "the device code on stderr",
      async () => /enter the code\s+([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1],
      30_000,
    );
    // a person on another machine: Chromium opens the verification page, signs in, types the code
    // and allows the device
    const browser = await launchChromium();
    try {
      const tab = await browser.newPage();
      await tab.goto(`${stack.api}/device`);
      await tab.fill('input[name="email"]', alice.user.email);
      await tab.fill('input[name="password"]', "correct horse battery");
      await Promise.all([tab.waitForSelector('input[name="user_code"]'), tab.click('button[type="submit"]')]);
      await tab.fill('input[name="user_code"]', code);
      await Promise.all([tab.waitForSelector('button[value="approve"]'), tab.click('button[type="submit"]')]);
      expect(await tab.textContent("h1")).toContain(code);
      await Promise.all([tab.waitForSelector("text=Device connected"), tab.click('button[value="approve"]')]);
    } finally {
      await browser.close();
    }
    const login = await done;
    expect(login.code, login.stderr).toBe(0);
    const result = JSON.parse(login.stdout);
    expect(result.user.email).toBe(alice.user.email);
    expect(result.credential.source).toBe("login");
    const file = path.join(configHome, "podhost", "credentials.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(file, "utf8"));
    expect(stored.connector_id).toMatch(/^cng_/);

    // the stored login works without PODHOST_TOKEN
    const me = json(await cli(["whoami", "--json"]));
    expect(me).toMatchObject({
      user: { email: alice.user.email },
      credential: { source: "login", kind: "connector" },
    });
    expect(me.team.id).toBe(alice.user.active_team_id);

    // precedence: PODHOST_TOKEN over the stored login, --token over both
    const bob = await signUp(stack.api, "Bob");
    const viaEnv = json(await cli(["whoami", "--json"], { env: { PODHOST_TOKEN: bob.token } }));
    expect(viaEnv).toMatchObject({ user: { email: bob.user.email }, credential: { source: "env" } });
    const viaFlag = json(
      await cli(["whoami", "--json", "--token", alice.token], { env: { PODHOST_TOKEN: bob.token } }),
    );
    expect(viaFlag).toMatchObject({ user: { email: alice.user.email }, credential: { source: "flag" } });
    // a stale PODHOST_TOKEN is not silently replaced by the login: 4, naming where it came from
    const stale = await cli(["whoami"], { env: { PODHOST_TOKEN: "not-a-valid-token" } });
    expect(stale.code).toBe(4);
    expect(stale.stderr).toContain("PODHOST_TOKEN");
    expect(stale.stderr).toContain("HTTP 401");

    const logout = json(await cli(["logout", "--json"]));
    expect(logout).toMatchObject({ status: "logged_out", revoked: true });
    await expect(stat(file)).rejects.toThrow();
    const old = await fetch(`${stack.api}/api/auth/user`, {
      headers: { authorization: `Bearer ${stored.access_token}` },
    });
    expect(old.status).toBe(401);
  });

  it("links a folder, deploys it (ignore files respected), serves it, and deploys an edit", {
    timeout: 240_000,
  }, async () => {
    const dir = path.join(home, "site");
    await mkdir(path.join(dir, "css"), { recursive: true });
    await writeFile(path.join(dir, "index.html"), "<h1>First version</h1>\n");
    await writeFile(path.join(dir, "css", "site.css"), "body { color: teal }\n");
    await writeFile(path.join(dir, ".gitignore"), "secret.txt\n");
    await writeFile(path.join(dir, "secret.txt"), "do not upload\n");
    await writeFile(path.join(dir, ".podhostignore"), "notes.md\n");
    await writeFile(path.join(dir, "notes.md"), "private notes\n");
    const pod = `cli-${stack.prefix.slice(-4)}`;

    const created = json(await asAlice(["deploy", "--create", pod, "--preset", "static", "--json"], dir));
    expect(created).toMatchObject({ pod, status: "running", files: 3, linked: true });
    expect(JSON.parse(await readFile(path.join(dir, ".podhost.json"), "utf8"))).toEqual({ pod });
    expect((await page(pod)).body).toContain("First version");
    const listing = await asAlice(["exec", "--", "sh", "-c", "ls -A ~/app"], dir);
    expect(listing.code).toBe(0);
    expect(listing.stdout).toContain("index.html");
    expect(listing.stdout).not.toContain("secret.txt");
    expect(listing.stdout).not.toContain("notes.md");

    await writeFile(path.join(dir, "index.html"), "<h1>Second version</h1>\n");
    const again = json(await asAlice(["deploy", "--json"], dir));
    expect(again).toMatchObject({ pod, status: "uploaded", files: 3 });
    expect((await page(pod)).body).toContain("Second version");

    // the linked pod is every command's default
    const status = json(await asAlice(["status", "--json"], dir));
    expect(status).toMatchObject({ name: pod, status: "running" });
    const list = json(await asAlice(["pods", "ls", "--json"]));
    expect(list.pods.map((p: { name: string }) => p.name)).toContain(pod);
  });

  it("exec passes the command's exit status through; a missing pod is 3", async () => {
    const dir = path.join(home, "site");
    const ok = await asAlice(["exec", "--", "sh", "-c", "echo out; echo err >&2"], dir);
    expect(ok).toMatchObject({ code: 0, stdout: "out\n" });
    expect(ok.stderr).toContain("err");
    expect((await asAlice(["exec", "--", "sh", "-c", "exit 7"], dir)).code).toBe(7);
    const asJson = json(await asAlice(["exec", "--json", "--", "true"], dir));
    expect(asJson).toMatchObject({ exit_code: 0, timed_out: false });
    const missing = await asAlice(["exec", "--pod", "no-such-pod", "--", "true"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("HTTP 404");
  });

  it("env push then pull round-trips values with spaces, quotes and #", { timeout: 60_000 }, async () => {
    const dir = path.join(home, "site");
    const vars = {
      GREETING: "hello world",
      QUOTED: `she said "hi" and 'bye'`,
      HASH: "value # not a comment",
      BACKSLASH: "C:\\path\\n",
      MULTI: "line one\nline two",
    };
    await writeFile(
      path.join(dir, "in.env"),
      [
        "# a comment",
        'GREETING="hello world"',
        `QUOTED="she said \\"hi\\" and 'bye'"`,
        "HASH='value # not a comment'",
        'BACKSLASH="C:\\\\path\\\\n"',
        'MULTI="line one\\nline two"',
        "",
      ].join("\n"),
    );
    json(await asAlice(["env", "push", "in.env", "--json"], dir));
    const listed = json(await asAlice(["env", "ls", "--json"], dir));
    expect(listed.vars).toMatchObject(vars);
    expect((await asAlice(["env", "pull", "out.env"], dir)).code).toBe(0);
    // pushing what was pulled changes nothing
    json(await asAlice(["env", "push", "out.env", "--json"], dir));
    expect(json(await asAlice(["env", "ls", "--json"], dir)).vars).toEqual(listed.vars);
    expect(json(await asAlice(["env", "get", "HASH", "--json"], dir))).toEqual({
      key: "HASH",
      value: vars.HASH,
    });
    expect((await asAlice(["env", "get", "NOPE"], dir)).code).toBe(3);
  });

  it("logs -f prints a line the app writes after it started (newline-delimited JSON)", {
    timeout: 90_000,
  }, async () => {
    const dir = path.join(home, "site");
    const pod = JSON.parse(await readFile(path.join(dir, ".podhost.json"), "utf8")).pod as string;
    const marker = `cli-follow-${Date.now().toString(36)}`;
    const child = spawnCli(["logs", "-f", "--source", "web", "-n", "1", "--json"], {
      cwd: dir,
      env: { PODHOST_TOKEN: alice.token },
    });
    const done = collect(child);
    let stdout = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    try {
      const seen = await waitFor(
        "the request's line in the followed log",
        async () => {
          await httpGet(stack.edgePort, `${pod}.pods.localhost`, `/${marker}`).catch(() => undefined);
          return stdout.includes(marker) ? stdout : undefined;
        },
        60_000,
      );
      const record = seen
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { line: string; source: string })
        .find((r) => r.line.includes(marker));
      expect(record?.source).toBe("web");
    } finally {
      child.kill("SIGTERM");
      await done;
    }
  });

  it("ssh adds the user's key to the pod and runs the real ssh through the gateway", {
    timeout: 90_000,
  }, async () => {
    const dir = path.join(home, "site");
    const keyDir = path.join(home, ".ssh");
    await mkdir(keyDir, { recursive: true, mode: 0o700 });
    const key = path.join(keyDir, "id_ed25519");
    await collect(
      spawn("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key], {
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    const sshOpts = [
      "-o",
      "BatchMode=yes",
      // only the key the CLI added: an ssh-agent's keys offered first would be failed logins
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "ConnectTimeout=30",
      "-o",
      "StrictHostKeyChecking=accept-new",
      "-o",
      `UserKnownHostsFile=${path.join(keyDir, "known_hosts")}`,
    ];
    // The key is added on the first try and the agent re-reads the pod's keys at once (keysChanged),
    // so the first ssh should get in. Under load the gateway's read of authorized_keys (a process
    // in the pod) can time out, which refuses that login: a few spaced tries, each failure printed
    // with the agent's ssh warnings of that moment so a flake is seen, and never as many as the
    // gateway's 10 failed logins that would block this address (auth-limiter.ts).
    let notes = "";
    const failures: string[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const r = await asAlice(["ssh", "-i", `${key}.pub`, "--", ...sshOpts, "true"], dir);
      notes += r.stderr;
      if (r.code === 0) break;
      const agentSaid = stack.agent.output
        .join("")
        .split("\n")
        .filter((l) => l.includes("ssh"))
        .slice(-5)
        .join("\n");
      failures.push(`try ${attempt}: exit ${r.code}: ${r.stderr.slice(-400)}\nagent: ${agentSaid}`);
      console.warn(`[cli e2e] ssh try ${attempt} failed:\n${failures.at(-1)}`);
      await sleep(2000 * attempt);
    }
    expect(failures.length, failures.join("\n---\n")).toBeLessThan(4);
    expect(notes.match(/Added your public key/g)?.length).toBe(1);
    const failing = await asAlice(["ssh", "-i", `${key}.pub`, "--", ...sshOpts, "exit 3"], dir);
    expect(failing.code).toBe(3);
    expect(failing.stderr).not.toContain("Added your public key");
    // with --json: what the CLI would run, without running it
    const planned = json(await asAlice(["ssh", "-i", `${key}.pub`, "--json", "--", "true"], dir));
    expect(planned.argv).toEqual([
      "ssh",
      "-p",
      String(planned.port),
      "-i",
      key,
      `${planned.user}@${planned.host}`,
      "true",
    ]);
  });

  it("answers --json for every command family", { timeout: 120_000 }, async () => {
    const dir = path.join(home, "site");
    const teams = json(await asAlice(["teams", "ls", "--json"]));
    expect(teams[0]).toMatchObject({ id: alice.user.active_team_id, role: "owner" });
    const created = json(await asAlice(["tokens", "create", "ci", "--json"]));
    expect(created.token).toMatch(/^ipk_/);
    // the new API token works as PODHOST_TOKEN, on its team
    const viaToken = json(await cli(["whoami", "--json"], { env: { PODHOST_TOKEN: created.token } }));
    expect(viaToken).toMatchObject({
      credential: { source: "env", kind: "api_token" },
      team: { id: alice.user.active_team_id },
    });
    expect(json(await asAlice(["tokens", "ls", "--json"])).map((t: { id: string }) => t.id)).toContain(
      created.id,
    );
    expect(json(await asAlice(["tokens", "revoke", created.id, "--yes", "--json"]))).toMatchObject({
      id: created.id,
    });
    expect(Array.isArray(json(await asAlice(["keys", "ls", "--json"])))).toBe(true);
    expect(json(await asAlice(["domains", "ls", "--json"], dir))).toEqual({ domains: [] });
    expect(json(await asAlice(["db", "ls", "--json"], dir))).toEqual([]);
    expect(json(await asAlice(["deploys", "ls", "--json"], dir))).toMatchObject({ deployments: [] });
    expect(json(await asAlice(["logs", "-n", "5", "--json"], dir))).toMatchObject({
      source: expect.any(String),
    });
    expect(json(await asAlice(["link", "--json"], dir))).toMatchObject({ pod: expect.any(String) });
    expect(json(await asAlice(["pods", "info", "--json"], dir))).toMatchObject({ status: "running" });
    expect(json(await cli(["completion", "bash", "--json"]))).toMatchObject({ shell: "bash" });
    const notFound = await asAlice(["pods", "info", "no-such-pod", "--json"]);
    expect(notFound.code).toBe(3);
    expect(JSON.parse(notFound.stdout)).toMatchObject({ status: 404, exit_code: 3 });
  });

  it("logs in through the browser: the URL is printed first, Chromium signs in and allows, the loopback redirect is caught", {
    timeout: 120_000,
  }, async () => {
    const loginHome = await mkdtemp(path.join(tmpdir(), "podhost-cli-browser-"));
    const child = spawnCli(["login", "--no-browser", "--json"], { env: { XDG_CONFIG_HOME: loginHome } });
    const done = collect(child);
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const url = await waitFor(
      "the authorization URL on stderr",
      async () => /(http:\/\/\S+\/authorize\?\S+)/.exec(stderr)?.[1],
      30_000,
    );
    // the one-shot listener answers only its own state: a forged redirect does not end the login
    const redirectUri = new URL(url).searchParams.get("redirect_uri") ?? "";
    expect(redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    const forged = await fetch(`${redirectUri}?code=forged&state=not-the-state`);
    expect(forged.status).toBe(404);
    expect(child.exitCode).toBe(null);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await page.fill('input[name="email"]', alice.user.email);
      await page.fill('input[name="password"]', "correct horse battery");
      await Promise.all([page.waitForURL(/\/authorize\?/), page.click('button[type="submit"]')]);
      await page.waitForSelector('button[value="approve"]');
      expect(await page.textContent("h1")).toContain("podhost CLI");
      await Promise.all([
        page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/),
        page.click('button[value="approve"]'),
      ]);
      expect(await page.textContent("body")).toContain("Signed in");
    } finally {
      await browser.close();
    }
    const login = await done;
    expect(login.code, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toMatchObject({
      user: { email: alice.user.email },
      credential: { source: "login" },
    });
    const stored = JSON.parse(await readFile(path.join(loginHome, "podhost", "credentials.json"), "utf8"));
    expect(stored).toMatchObject({ method: "browser", connector_id: expect.stringMatching(/^cng_/) });
    await rm(loginHome, { recursive: true, force: true });
  });

  it("files cp copies both ways; files, backups, agents and git answer --json", {
    timeout: 90_000,
  }, async () => {
    const dir = path.join(home, "site");
    const local = path.join(home, "blob.bin");
    const data = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
    await writeFile(local, data);
    const up = json(await asAlice(["files", "cp", local, ":uploads/", "--json"], dir));
    expect(up).toMatchObject({ to: "/home/pod_user/app/uploads/blob.bin", bytes: data.byteLength });
    const listed = json(await asAlice(["files", "ls", "uploads", "--json"], dir));
    expect(listed.files.map((f: { name: string }) => f.name)).toContain("blob.bin");
    const back = path.join(home, "blob.back");
    const down = json(await asAlice(["files", "cp", ":uploads/blob.bin", back, "--json"], dir));
    expect(down.bytes).toBe(data.byteLength);
    expect(Buffer.compare(await readFile(back), data)).toBe(0);
    expect((await asAlice(["files", "cp", local, back], dir)).code).toBe(2);
    expect(json(await asAlice(["files", "rm", "uploads", "--json"], dir))).toMatchObject({
      status: "deleted",
    });
    expect(json(await asAlice(["backups", "ls", "--json"], dir))).toMatchObject({ backups: [] });
    expect(json(await asAlice(["agents", "ls", "--json"], dir))).toEqual({ agents: [] });
    const disconnected = await asAlice(["git", "disconnect", "--json"], dir);
    expect([0, 3]).toContain(disconnected.code);
  });

  it("backups import uploads a downloaded archive, which the host checks before it counts; a bad file is refused", {
    timeout: 240_000,
  }, async () => {
    const dir = path.join(home, "site");
    const made = json(await asAlice(["backups", "create", "--note", "to import", "--json"], dir));
    const original = await waitFor(
      "the backup completed",
      async () => {
        const list = json(await asAlice(["backups", "ls", "--json"], dir));
        const b = list.backups.find((x: { id: string }) => x.id === made.id);
        if (b?.status === "failed") throw new Error(`backup failed: ${b.error}`);
        return b?.status === "completed" ? b : undefined;
      },
      180_000,
    );
    const archive = path.join(home, "backup.tar.gz");
    json(await asAlice(["backups", "download", made.id, archive, "--json"], dir));
    // the launch plan keeps one backup, and an import counts: the original goes first
    expect(json(await asAlice(["backups", "rm", made.id, "--yes", "--json"], dir))).toEqual({
      id: made.id,
      status: "deleted",
    });

    // not a .tar.gz: the API's 400 and its words, exit 1, nothing kept
    const bogus = path.join(home, "bogus.tar.gz");
    await writeFile(bogus, "plain text, not gzip\n");
    const refused = await asAlice(["backups", "import", bogus, "--json"], dir);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      status: 400,
      error: expect.stringContaining("tar.gz"),
    });
    expect(json(await asAlice(["backups", "ls", "--json"], dir)).backups).toEqual([]);

    const imported = await asAlice(
      ["backups", "import", archive, "--note", "from disk", "--wait", "--json"],
      dir,
    );
    const record = json(imported);
    expect(record).toMatchObject({
      status: "completed",
      trigger: "import",
      note: "from disk",
      size: original.size,
      sha256: original.sha256,
      verified_at: expect.any(String),
    });
    expect(record.id).not.toBe(made.id);
    // no terminal: no progress bar drawn on stderr
    expect(imported.stderr).not.toContain("Uploading");
    const ids = json(await asAlice(["backups", "ls", "--json"], dir)).backups.map(
      (b: { id: string }) => b.id,
    );
    expect(ids).toEqual([record.id]);
    // a file that is not there is a usage error before any request
    expect((await asAlice(["backups", "import", path.join(home, "missing.tar.gz")], dir)).code).toBe(2);
  });

  it("deploy of a pod connected to a repository whose build fails exits 5 with the reason, the build log streamed; logs -f follows the app", {
    timeout: 300_000,
  }, async () => {
    const server = await startGitServer();
    try {
      await server.createRepo("acme/broken", {
        "package.json": JSON.stringify({
          name: "app",
          version: "1.0.0",
          scripts: { start: "node server.js", build: "echo the-build-broke-here; exit 1" },
        }),
        "server.js":
          'require("http").createServer((q, s) => s.end("up")).listen(Number(process.env.PORT), "0.0.0.0");\n',
      });
      const pod = `clib-${stack.prefix.slice(-4)}`;
      json(await asAlice(["pods", "create", pod, "--preset", "nodejs", "--wait", "--json"]));
      const connected = json(
        await asAlice([
          "git",
          "connect",
          server.url("acme/broken"),
          "--pod",
          pod,
          "--branch",
          "main",
          "--no-auto-deploy",
          "--json",
        ]),
      );
      expect(connected).toMatchObject({
        repo_url: server.url("acme/broken"),
        branch: "main",
        auto_deploy: false,
      });

      // as a person reads it: the build's own output on stderr as it runs, then the reason, exit 5
      const human = await asAlice(["deploy", "--pod", pod]);
      expect(human.code, human.stderr).toBe(5);
      expect(human.stderr).toContain("the-build-broke-here");
      expect(human.stderr).toMatch(/error: deployment \S+ failed: .+/);

      // as a script reads it: newline-delimited JSON, the log lines, the outcome, then the error
      const scripted = await asAlice(["deploy", "--pod", pod, "--json"]);
      expect(scripted.code, scripted.stderr).toBe(5);
      const records = scripted.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records.some((r) => r.type === "log" && String(r.line).includes("the-build-broke-here"))).toBe(
        true,
      );
      const outcome = records.find((r) => r.type === "result") as {
        deployment: { status: string; failure: { class: string; message: string } };
      };
      expect(outcome.deployment).toMatchObject({ status: "failed", failure: { class: "build_script" } });
      expect(records.at(-1)).toMatchObject({
        exit_code: 5,
        error: expect.stringContaining(outcome.deployment.failure.message),
      });
      const history = json(await asAlice(["deploys", "ls", pod, "--json"]));
      expect(history.deployments.map((d: { status: string }) => d.status)).toEqual(["failed", "failed"]);
      // the failed deploys left the pod serving; a folder of a Node app that prints every request
      // it gets, then logs -f on the app's own output sees a line printed after it started
      const appDir = path.join(home, "node-app");
      await mkdir(appDir, { recursive: true });
      await writeFile(
        path.join(appDir, "package.json"),
        JSON.stringify({ name: "app", version: "1.0.0", scripts: { start: "node server.js" } }),
      );
      await writeFile(
        path.join(appDir, "server.js"),
        'require("http").createServer((q, s) => { console.log("app saw " + q.url); s.end("ok"); }).listen(Number(process.env.PORT), "0.0.0.0");\n',
      );
      json(await asAlice(["deploy", appDir, "--pod", pod, "--zip", "--json"]));
      const marker = `app-line-${Date.now().toString(36)}`;
      const follow = spawnCli(["logs", pod, "-f", "--source", "app", "-n", "1", "--json"], {
        env: { PODHOST_TOKEN: alice.token },
      });
      const followed = collect(follow);
      let out = "";
      follow.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      try {
        await waitFor(
          "the app's own line in logs -f",
          async () => {
            await httpGet(stack.edgePort, `${pod}.pods.localhost`, `/${marker}`).catch(() => undefined);
            return out.includes(`app saw /${marker}`) ? true : undefined;
          },
          60_000,
        );
        const record = out
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { line: string; source: string })
          .find((r) => r.line.includes(marker));
        expect(record?.source).toBe("app");
      } finally {
        follow.kill("SIGTERM");
        await followed;
      }
      json(await asAlice(["pods", "rm", pod, "--yes", "--json"]));
    } finally {
      await server.close();
    }
  });
});
