import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

// The pods reach no registry (only Debian's apt mirror), so every manifest here installs offline:
// an empty dependencies object for npm, an empty requirements.txt for pip.
const PACKAGE_JSON = JSON.stringify({
  name: "reload-test",
  version: "1.0.0",
  scripts: { start: "node server.js" },
  dependencies: {},
});
const MISSING_PACKAGE_JSON = JSON.stringify({
  name: "reload-test",
  version: "1.0.0",
  scripts: { start: "node server.js" },
  dependencies: { "this-package-does-not-exist-podhost": "1.0.0" },
});

describe("POST /api/pods/{name}/reload", () => {
  let stack: Stack;
  let alice: User;
  let bob: User;
  let node: string;
  let site: string;
  let py: string;
  let php: string;

  const sh = async (pod: string, script: string, ...args: string[]) => {
    const res = await alice.api.post(`/api/pods/${pod}/exec`, {
      command: ["sh", "-c", script, "sh", ...args],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.exit_code, res.body.stderr).toBe(0);
    return res.body.stdout as string;
  };
  const reload = (pod: string) => alice.api.post(`/api/pods/${pod}/reload`);

  beforeAll(async () => {
    stack = await startStack("reload");
    alice = await signUp(stack.api, "Alice");
    bob = await signUp(stack.api, "Bob");
    const tag = stack.prefix.slice(-4);
    node = `node-${tag}`;
    site = `site-${tag}`;
    py = `py-${tag}`;
    php = `php-${tag}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [
      [node, "nodejs"],
      [site, "static"],
      [py, "python"],
      [php, "php"],
    ]);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("restarts the web service of a running static pod", async () => {
    const res = await reload(site);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "reloaded", services: ["web"], preset: "static" });
  });

  it("starts a stopped pod first", async () => {
    expect((await alice.api.post(`/api/pods/${site}/stop`)).body.status).toBe("stopped");
    const res = await reload(site);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.services).toEqual(["web"]);
    expect((await alice.api.get(`/api/pods/${site}`)).body.status).toBe("running");
    // runit may still be bringing the restarted service up: give it a moment.
    expect(
      await waitFor(
        "web to run",
        async () => ((await sh(site, "sv status web")).startsWith("run: web") ? true : undefined),
        15_000,
      ),
    ).toBe(true);
  });

  it("installs a package.json with npm and restarts the app", async () => {
    await sh(
      node,
      'printf %s "$1" > ~/app/package.json && echo \'require("http").createServer((q, s) => s.end("ok")).listen(process.env.PORT)\' > ~/app/server.js',
      PACKAGE_JSON,
    );
    const res = await reload(node);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      status: "reloaded",
      services: ["app"],
      preset: "nodejs",
      deps_installed: "npm",
    });
    expect(await sh(node, "cat ~/logs/build.log")).toContain("npm install");
    expect(await sh(node, "test -f ~/app/package-lock.json && echo yes")).toBe("yes\n");
  });

  it("records a reloaded event with the services and the installer", async () => {
    const res = await alice.api.get(`/api/pods/${node}/events?type=reloaded`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.events[0].metadata)).toEqual({ services: ["app"], deps_installed: "npm" });
  });

  it("answers 500 with npm's output when the install fails", { timeout: 300_000 }, async () => {
    await sh(
      node,
      // No retries: the registry is unreachable from here, and npm's default retries take a minute.
      'printf %s "$1" > ~/app/package.json && rm -f ~/app/package-lock.json && printf "fetch-retries=0\\nfetch-timeout=10000\\n" > ~/app/.npmrc',
      MISSING_PACKAGE_JSON,
    );
    const res = await reload(node);
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    expect(res.body.error).toMatch(/dependency install or build failed/);
    expect(res.body.deps_output).toMatch(/npm (error|ERR!)/);
    expect(res.body.deps_output.length).toBeLessThanOrEqual(64 * 1024);
    expect(await sh(node, "cat ~/logs/build.log")).toContain("failed with exit status");
  });

  it("creates ~/app/.venv and pip-installs an empty requirements.txt", { timeout: 180_000 }, async () => {
    await sh(py, ": > ~/app/requirements.txt");
    const res = await reload(py);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      status: "reloaded",
      services: ["app"],
      preset: "python",
      deps_installed: "pip",
    });
    expect(await sh(py, "test -x ~/app/.venv/bin/python && echo yes")).toBe("yes\n");
  });

  it("composer-installs a composer.json in a php pod", { timeout: 180_000 }, async () => {
    await sh(php, `printf '{"name": "podhost/test", "require": {}}\\n' > ~/app/composer.json`);
    const res = await reload(php);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // the spec's deps_installed names npm or pip; composer shows in the build log and the event
    expect(res.body).toEqual({ status: "reloaded", services: ["web", "php-fpm"], preset: "php" });
    expect(
      await sh(php, "test -f ~/app/vendor/autoload.php && grep -c 'composer install' ~/logs/build.log"),
    ).toMatch(/^[1-9]\d*\n$/);
  });

  it("skips manifests the image has no tool for (go.mod)", async () => {
    await sh(site, "printf 'module x\\n' > ~/app/go.mod");
    const res = await reload(site);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "reloaded", services: ["web"], preset: "static" });
  });

  it("hides another team's pod and is in the OpenAPI document", async () => {
    expect((await bob.api.post(`/api/pods/${node}/reload`)).status).toBe(404);
    const doc = await alice.api.get("/openapi.json");
    expect(doc.body.paths["/api/pods/{name}/reload"].post).toBeDefined();
  });
});
