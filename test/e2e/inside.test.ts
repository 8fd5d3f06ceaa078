import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

const ENV_PATH = "/home/pod_user/app/.env";
const SERVER_JS = `require("http").createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ x: process.env.X ?? null, y: process.env.Y ?? null, node: process.version }));
}).listen(process.env.PORT);
`;

describe("working inside a pod: exec, env, logs, preset, disk usage, Node version", () => {
  let stack: Stack;
  let alice: User;
  let bob: User;
  let node: string;
  let site: string;

  const exec = (pod: string, command: string[], extra: Record<string, unknown> = {}) =>
    alice.api.post(`/api/pods/${pod}/exec`, { command, ...extra });

  /** run in the pod and insist it worked */
  const sh = async (pod: string, script: string, ...args: string[]) => {
    const res = await exec(pod, ["sh", "-c", script, "sh", ...args]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.exit_code, res.body.stderr).toBe(0);
    return res.body.stdout as string;
  };

  const appSays = (expect: (body: { x: string | null; y: string | null; node: string }) => boolean) =>
    waitFor(
      "the app to answer as expected",
      async () => {
        const page = await httpGet(stack.edgePort, `${node}.pods.localhost`).catch(() => undefined);
        if (page?.status !== 200) return undefined;
        try {
          const body = JSON.parse(page.body);
          return expect(body) ? body : undefined;
        } catch {
          return undefined;
        }
      },
      30_000,
    );

  beforeAll(async () => {
    stack = await startStack("inside");
    alice = await signUp(stack.api, "Alice");
    bob = await signUp(stack.api, "Bob");
    const tag = stack.prefix.slice(-4);
    node = `node-${tag}`;
    site = `site-${tag}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [
      [node, "nodejs"],
      [site, "static"],
    ]);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  describe("command runner", () => {
    it("runs argv as pod_user and answers 200 with a non-zero exit", async () => {
      const res = await exec(node, ["sh", "-c", "echo $HOME; id -u; exit 3"]);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ exit_code: 3, stdout: "/home/pod_user\n1000\n", timed_out: false });
      expect(res.body.stderr).toBe("");
      expect(res.body.duration_ms).toBeGreaterThanOrEqual(0);
    });

    it("passes shell metacharacters literally (no shell)", async () => {
      const res = await exec(node, ["echo", "$(id)", "`id`", ";", "*", "|", "&&"]);
      expect(res.body).toMatchObject({ exit_code: 0, stdout: "$(id) `id` ; * | &&\n" });
    });

    it("runs in the app root by default and in an allowed workdir when asked", async () => {
      expect((await exec(node, ["pwd"])).body.stdout).toBe("/home/pod_user/app\n");
      expect((await exec(node, ["pwd"], { workdir: "/tmp" })).body.stdout).toBe("/tmp\n");
      expect((await exec(node, ["pwd"], { workdir: "/home/pod_user/./.pod/" })).body.stdout).toBe(
        "/home/pod_user/.pod\n",
      );
    });

    it("refuses a bad workdir, an empty command and bad timeouts with 400", async () => {
      for (const workdir of ["/etc", "../x", "app", "/home/pod_user/../../etc", "/home/pod_user/nope"]) {
        const res = await exec(node, ["pwd"], { workdir });
        expect(res.status, workdir).toBe(400);
        expect(res.body.error).toMatch(/^workdir: /);
      }
      for (const body of [
        { command: [] },
        {},
        { command: "ls -la" },
        { command: ["x".repeat(8 * 1024 + 1)] },
        { command: ["ls"], timeout_s: 0 },
        { command: ["ls"], timeout_s: 301 },
      ]) {
        const res = await alice.api.post(`/api/pods/${node}/exec`, body);
        expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
        expect(res.body.error).toMatch(/command|timeout_s/);
      }
    });

    it("reports a missing program as exit 127, still 200", async () => {
      const res = await exec(node, ["definitely-not-a-program"]);
      expect(res.status).toBe(200);
      expect(res.body.exit_code).toBe(127);
    });

    it("kills a command at its timeout, children included", async () => {
      const res = await exec(node, ["sh", "-c", "sleep 30 & sleep 30; echo never"], { timeout_s: 1 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ timed_out: true, exit_code: 124, stdout: "" });
      expect(res.body.duration_ms).toBeGreaterThanOrEqual(1000);
      expect(res.body.duration_ms).toBeLessThan(8000);
      const left = await exec(node, ["sh", "-c", "ps -eo args | grep -c '^sleep 30' || true"]);
      expect(left.body.stdout.trim()).toBe("0");
    });

    it("answers once the command exited, though a child it left in the background holds its output", async () => {
      const started = Date.now();
      const res = await exec(node, ["sh", "-c", "sleep 60 & echo started"], { timeout_s: 30 });
      expect(res.body).toMatchObject({ exit_code: 0, stdout: "started\n", timed_out: false });
      expect(Date.now() - started).toBeLessThan(10_000);
      await exec(node, ["pkill", "-f", "sleep 60"]);
    });

    it("caps each stream at 1 MiB with a truncation marker", async () => {
      const res = await exec(node, ["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo err >&2"]);
      expect(res.status).toBe(200);
      const marker = `\n[output truncated: ${3_000_000 - 1024 * 1024} bytes omitted]`;
      expect(res.body.stdout.endsWith(marker)).toBe(true);
      expect(res.body.stdout.length).toBe(1024 * 1024 + marker.length);
      expect(res.body.stderr).toBe("err\n");
    });

    it("keeps binary output within the result budget, counting every omitted byte", async () => {
      const res = await exec(node, ["head", "-c", "1500000", "/dev/zero"]);
      expect(res.status).toBe(200);
      const m = /\n\[output truncated: (\d+) bytes omitted\]$/.exec(res.body.stdout);
      expect(m).not.toBeNull();
      const kept = res.body.stdout.length - (m?.[0].length ?? 0);
      expect(kept).toBeGreaterThan(100_000);
      expect(kept + Number(m?.[1])).toBe(1_500_000);
    });

    it("hides another team's pod (404)", async () => {
      expect((await bob.api.post(`/api/pods/${node}/exec`, { command: ["id"] })).status).toBe(404);
      expect((await bob.api.get(`/api/pods/${node}/env`)).status).toBe(404);
      expect((await bob.api.get(`/api/pods/${node}/logs`)).status).toBe(404);
    });
  });

  describe("environment variables", () => {
    const tricky = "line one\nline \"two\" with 'quotes' # not a comment = k=v \\ back\\slash $HOME";

    it("round-trips any value through PUT/GET and the running Node app sees it", async () => {
      await sh(node, 'printf %s "$1" > /home/pod_user/app/server.js', SERVER_JS);
      const put = await alice.api.put(`/api/pods/${node}/env`, { vars: { X: tricky, Y: "plain" } });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      expect(put.body).toEqual({ path: ENV_PATH, vars: { X: tricky, Y: "plain" }, restarted: ["app"] });

      const got = await alice.api.get(`/api/pods/${node}/env`);
      expect(got.body).toEqual({ path: ENV_PATH, vars: { X: tricky, Y: "plain" } });
      await appSays((b) => b.x === tricky && b.y === "plain");
    });

    it("merges: keeps other keys and the user's own lines", async () => {
      await sh(node, `printf '# my comment\\nexport HAND=written # by hand\\n' >> ${ENV_PATH}`);
      const put = await alice.api.put(`/api/pods/${node}/env`, { vars: { Y: "changed", Z: "new" } });
      expect(put.body.vars).toEqual({ X: tricky, Y: "changed", HAND: "written", Z: "new" });
      const file = await sh(node, `cat ${ENV_PATH}`);
      expect(file).toContain("# my comment\nexport HAND=written # by hand\n");
      await appSays((b) => b.y === "changed");
      const perms = await sh(node, `stat -c '%u %a' ${ENV_PATH}`);
      expect(perms.trim()).toBe("1000 600");
    });

    it("deletes keys and restarts the app", async () => {
      const del = await alice.api.delete(`/api/pods/${node}/env`, { keys: ["Y", "HAND", "NOT_THERE"] });
      expect(del.status).toBe(200);
      expect(del.body).toEqual({ path: ENV_PATH, vars: { X: tricky, Z: "new" } });
      await appSays((b) => b.y === null && b.x === tricky);
    });

    it("records env_updated events naming keys, never values", async () => {
      const res = await alice.api.get(`/api/pods/${node}/events?type=env_updated`);
      expect(res.body.events.length).toBe(3);
      const all = JSON.stringify(res.body.events);
      expect(all).toContain("HAND");
      expect(all).not.toContain("changed");
      expect(all).not.toContain("line one");
      expect(JSON.parse(res.body.events[0].metadata)).toMatchObject({
        action: "unset",
        keys: ["Y", "HAND", "NOT_THERE"],
      });
    });

    it("refuses empty or invalid input with 400", async () => {
      const cases: [string, unknown][] = [
        ["put", { vars: {} }],
        ["put", {}],
        ["put", { vars: { "BAD-NAME": "x" } }],
        ["put", { vars: { "1ABC": "x" } }],
        ["put", { vars: { A: 1 } }],
        ["delete", { keys: [] }],
        ["delete", {}],
        ["delete", { keys: ["bad name"] }],
      ];
      for (const [method, body] of cases) {
        const res =
          method === "put"
            ? await alice.api.put(`/api/pods/${node}/env`, body)
            : await alice.api.delete(`/api/pods/${node}/env`, body);
        expect(res.status, `${method} ${JSON.stringify(body)}`).toBe(400);
        expect(res.body.error).toMatch(/vars|keys/);
      }
    });

    it("a fresh pod created without env vars has no env file: {} and DELETE 404; PUT creates it and restarts nothing", async () => {
      // nothing has touched this pod's env yet: creation wrote no (empty) .env
      expect(await sh(site, `[ -e ${ENV_PATH} ] && echo present || echo absent`)).toBe("absent\n");
      expect((await alice.api.get(`/api/pods/${site}/env`)).body).toEqual({ path: ENV_PATH, vars: {} });
      const del = await alice.api.delete(`/api/pods/${site}/env`, { keys: ["A"] });
      expect(del.status).toBe(404);
      expect(del.body.error).toMatch(/env file/);
      const put = await alice.api.put(`/api/pods/${site}/env`, { vars: { A: "1" } });
      expect(put.body).toEqual({ path: ENV_PATH, vars: { A: "1" }, restarted: [] });
      // nginx never serves the dotfile
      const page = await httpGet(stack.edgePort, `${site}.pods.localhost`, "/.env");
      expect(page.status).not.toBe(200);
    });
  });

  describe("logs", () => {
    const lines = ["INFO alpha 1", "ERROR Beta 2", "info gamma 3", "Error delta 4", "INFO alpha 5"];
    const logs = (q: string) => alice.api.get(`/api/pods/${site}/logs?${q}`);

    beforeAll(async () => {
      await sh(site, 'printf "%s\\n" "$@" > /home/pod_user/logs/build.log', ...lines);
    });

    it("tails oldest first, `lines` limits", async () => {
      expect((await logs("source=build")).body).toEqual({ source: "build", lines });
      expect((await logs("source=build&lines=2")).body).toEqual({ source: "build", lines: lines.slice(-2) });
      const app = await logs("");
      expect(app.status).toBe(200);
      expect(app.body.source).toBe("app");
    });

    it("filters newest first with the last matches; lowercase pattern is case-insensitive", async () => {
      expect((await logs("source=build&grep=error")).body.lines).toEqual(["Error delta 4", "ERROR Beta 2"]);
      expect((await logs("source=build&grep=beta")).body.lines).toEqual(["ERROR Beta 2"]);
      expect((await logs("source=build&grep=alpha&lines=1")).body.lines).toEqual(["INFO alpha 5"]);
      expect((await logs(`source=build&grep=${encodeURIComponent("^info \\w+ [35]$")}`)).body.lines).toEqual([
        "INFO alpha 5",
        "info gamma 3",
      ]);
    });

    it("an uppercase pattern is case-sensitive", async () => {
      expect((await logs("source=build&grep=ERROR")).body.lines).toEqual(["ERROR Beta 2"]);
      const none = await logs("source=build&grep=Gamma");
      expect(none.status).toBe(200);
      expect(none.body).toEqual({ source: "build", lines: [], message: "no entries" });
    });

    it("a pattern that does not compile is 400 with grep's message", async () => {
      const cases: [string, RegExp][] = [
        ["(", /missing closing parenthesis/],
        ["a{2,1}", /numbers out of order/],
        ["[z-a]", /range out of order/],
      ];
      for (const [bad, message] of cases) {
        const res = await logs(`source=build&grep=${encodeURIComponent(bad)}`);
        expect(res.status, bad).toBe(400);
        expect(res.body.error).toMatch(/^grep: invalid pattern: /);
        expect(res.body.error).toMatch(message);
      }
      // also when the log file does not exist
      await sh(site, "rm -f /home/pod_user/logs/error.log");
      expect((await logs("source=error&grep=(")).status).toBe(400);
    });

    it("validates source and lines; a missing log file is no lines", async () => {
      for (const q of ["source=nginx", "lines=0", "lines=1001", "lines=abc"]) {
        expect((await logs(q)).status, q).toBe(400);
      }
      await sh(site, "rm -f /home/pod_user/logs/web.log");
      expect((await logs("source=web")).body).toEqual({ source: "web", lines: [] });
    });
  });

  describe("preset, disk usage and Node version", () => {
    it("describes the preset as the pod has it", async () => {
      const n = await alice.api.get(`/api/pods/${node}/preset`);
      expect(n.status).toBe(200);
      expect(n.body).toEqual({
        preset: "nodejs",
        port: 3000,
        app_root: "/home/pod_user/app",
        public_root: "/home/pod_user/app/public",
        runtime: { name: "node", version: expect.stringMatching(/^\d+\.\d+\.\d+$/) },
        start_command: "node server.js",
      });
      const s = await alice.api.get(`/api/pods/${site}/preset`);
      expect(s.body).toMatchObject({
        preset: "static",
        port: 8080,
        runtime: { name: "nginx", version: expect.stringMatching(/^1\.\d+/) },
        start_command: "nginx",
      });
    });

    it("measures the home against the plan's disk", async () => {
      await sh(node, "head -c 2000000 /dev/urandom > /home/pod_user/big.bin");
      const res = await alice.api.get(`/api/pods/${node}/disk-usage`);
      expect(res.status).toBe(200);
      expect(res.body.limit_bytes).toBe(5 * 1024 ** 3);
      expect(res.body.used_bytes).toBeGreaterThan(2_000_000);
      expect(res.body.percent).toBeCloseTo((res.body.used_bytes / res.body.limit_bytes) * 100, 1);
      const big = res.body.paths.find((p: { path: string }) => p.path === "/home/pod_user/big.bin");
      expect(big.bytes).toBeGreaterThanOrEqual(2_000_000);
      expect(res.body.paths.map((p: { path: string }) => p.path)).toContain("/home/pod_user/app");
      expect(res.body.paths[0].bytes).toBeGreaterThanOrEqual(res.body.paths.at(-1).bytes);
    });

    it("switches Node.js: node --version follows and the app restarts on it", async () => {
      const res = await alice.api.put(`/api/pods/${node}/node-version`, { version: "18" });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ node_version: "18" });
      expect((await exec(node, ["node", "--version"])).body.stdout).toMatch(/^v18\./);
      await appSays((b) => b.node.startsWith("v18."));
      expect((await alice.api.get(`/api/pods/${node}/preset`)).body.runtime.version).toMatch(/^18\./);
    });

    it("refuses the same version, an unsupported one and a non-Node pod with 400", async () => {
      const same = await alice.api.put(`/api/pods/${node}/node-version`, { version: "18" });
      expect(same.status).toBe(400);
      expect(same.body.error).toMatch(/already/);
      const old = await alice.api.put(`/api/pods/${node}/node-version`, { version: "16" });
      expect(old.status).toBe(400);
      expect(old.body.error).toMatch(/^version: /);
      const staticPod = await alice.api.put(`/api/pods/${site}/node-version`, { version: "22" });
      expect(staticPod.status).toBe(400);
      expect(staticPod.body.error).toMatch(/not a Node\.js pod/);
    });
  });

  it("documents every route in /openapi.json", async () => {
    const doc = await alice.api.get("/openapi.json");
    const paths = doc.body.paths;
    expect(paths["/api/pods/{name}/exec"].post).toBeDefined();
    expect(Object.keys(paths["/api/pods/{name}/env"]).sort()).toEqual(["delete", "get", "put"]);
    for (const p of ["logs", "preset", "disk-usage"])
      expect(paths[`/api/pods/{name}/${p}`].get, p).toBeDefined();
    expect(paths["/api/pods/{name}/node-version"].put).toBeDefined();
  });

  describe("a stopped pod", () => {
    it("refuses exec with 400 but still reads env and logs from its volume", async () => {
      expect((await alice.api.post(`/api/pods/${site}/stop`)).body.status).toBe("stopped");
      const res = await exec(site, ["id"]);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("pod is not running; start it first");
      expect((await alice.api.get(`/api/pods/${site}/env`)).body.vars).toEqual({ A: "1" });
      expect((await alice.api.get(`/api/pods/${site}/logs?source=build&lines=1`)).body.lines).toEqual([
        "INFO alpha 5",
      ]);
    });
  });
});
