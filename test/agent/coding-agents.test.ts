import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodingAgentCache, npmEnv } from "../../agent/coding-agents/host-cache";
import { chooseNode, minimumNodeMajor } from "../../agent/coding-agents/pod-install";
import { findCodingAgent } from "../../shared/coding-agents";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * Coding agents on the real engine (agent/coding-agents/): the host fetches the catalog's smallest
 * agent (Auggie, ~13 MB) from the real npm registry (only the host reaches it; the pods cannot), the
 * tree goes into the pod's ~/.npm-global as pod_user, and its command runs with `--version` through
 * the command runner's op. A Node.js pod runs it on its own Node; a PHP pod gets a pinned Node beside
 * its runtime. A missing version fails with npm's reason, a stopped pod is refused, and the user's
 * own npmrc (a planted prefix) is not read by the install.
 */

const auggie = findCodingAgent("auggie");
if (!auggie) throw new Error("the catalog lacks auggie");

let agent: Agent;
const node = podSpec("caganode", { preset: "nodejs", port: 3000 });
const php = podSpec("cagaphp", { preset: "php" });

const exec = async (pod: string, command: string[]) =>
  agent.handlers["pod.exec"]({ name: pod, command, timeoutS: 60 }, agent.ctx);

beforeAll(async () => {
  agent = await startAgent();
  await Promise.all([
    agent.handlers["pod.create"](node, agent.ctx),
    agent.handlers["pod.create"](php, agent.ctx),
  ]);
}, 180_000);

afterAll(async () => {
  await agent?.cleanup();
});

describe("Node for the agent", () => {
  it("takes the engines' minimum when above the catalog's", async () => {
    expect(await minimumNodeMajor(auggie, ">=22.0.0")).toBe(22);
    expect(await minimumNodeMajor(auggie, ">=16")).toBe(auggie.minNodeMajor);
    expect(await minimumNodeMajor(auggie, "not a range")).toBe(auggie.minNodeMajor);
  });
  it("uses a Node.js pod's own Node when new enough, else pins one the image carries", () => {
    const installed = [18, 20, 22, 24];
    expect(chooseNode({ preset: "nodejs", selected: 22, installed }, 20)).toEqual({
      major: 22,
      pinned: false,
    });
    expect(chooseNode({ preset: "nodejs", selected: 18, installed }, 20)).toEqual({
      major: 20,
      pinned: true,
    });
    expect(chooseNode({ preset: "php", selected: 20, installed }, 16)).toEqual({ major: 20, pinned: true });
    expect(chooseNode({ preset: "python", selected: 20, installed }, 22)).toEqual({
      major: 22,
      pinned: true,
    });
    expect(() => chooseNode({ preset: "static", selected: 20, installed }, 26)).toThrow(/Node 26 or newer/);
  });
});

describe("the registry's answer", () => {
  it("resolves a dist-tag to a version with its engines, also for a package without engines (opencode)", async () => {
    const cache = new CodingAgentCache(agent.stateDir, agent.config.codingAgents);
    const signal = AbortSignal.timeout(60_000);
    const withEngines = await cache.resolve("@augmentcode/auggie", "latest", signal);
    expect(withEngines.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(withEngines.enginesNode).toMatch(/\d/);
    const without = await cache.resolve("opencode-ai", "latest", signal);
    expect(without.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(without.enginesNode).toBeNull();
    // npm gets the operator's npm settings, never the agent's own (its host token)
    process.env.PODHOST_AGENT_TOKEN = "host-token-must-not-reach-npm";
    try {
      expect(Object.keys(npmEnv()).filter((k) => k.startsWith("PODHOST_"))).toEqual([]);
      expect(npmEnv().PATH).toBe(process.env.PATH);
    } finally {
      delete process.env.PODHOST_AGENT_TOKEN;
    }
    await expect(cache.resolve("opencode-ai", "0.0.0-podhost-missing", signal)).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("E404"),
    });
  });
});

describe("the host's cache", () => {
  it("keeps one tree per version; past its size the least recently used goes, never one in use", async () => {
    const dir = path.join(agent.stateDir, "cache-test");
    const cache = new CodingAgentCache(dir, { ...agent.config.codingAgents, maxCacheBytes: 1 });
    const signal = AbortSignal.timeout(120_000);
    const trees = () => readdir(path.join(dir, "coding-agents"));
    await cache.withTree("@augmentcode/auggie", "0.25.2", signal, async (older) => {
      expect(older.version).toBe("0.25.2");
      // a second version fetched while the first is in use: over the cap, yet both stay
      await cache.withTree("@augmentcode/auggie", "0.24.0", signal, async () => {
        expect(await trees()).toEqual(
          expect.arrayContaining(["@augmentcode+auggie@0.25.2", "@augmentcode+auggie@0.24.0"]),
        );
      });
    });
    // what an agent killed mid-fetch leaves behind: its scratch directory with a partial download
    const killed = path.join(dir, "coding-agents", ".fetch-0123456789ab");
    await mkdir(path.join(killed, "cache"), { recursive: true });
    await writeFile(path.join(killed, "cache", "partial.tgz"), "part of a tarball");
    // the next fetch, with neither in use: the older-used ones go, the new one stays; the killed
    // fetch's leftover goes too
    await cache.withTree("@augmentcode/auggie", "0.23.0", signal, async () => undefined);
    expect(await trees()).toEqual(["@augmentcode+auggie@0.23.0"]);

    // a tree over the per-agent limit is refused and nothing of it is kept
    const small = new CodingAgentCache(path.join(agent.stateDir, "small-test"), {
      ...agent.config.codingAgents,
      maxTreeBytes: 1024,
    });
    await expect(
      small.withTree("@augmentcode/auggie", "0.23.0", signal, async () => undefined),
    ).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("over this host's limit"),
    });
    expect(await readdir(path.join(agent.stateDir, "small-test", "coding-agents"))).toEqual([]);
  }, 180_000);
});

describe("install and remove", () => {
  it("installs into a Node.js pod on its own Node; --version runs; the user's npmrc is not read", async () => {
    // an attacker-ish npmrc: would send the command elsewhere and skip the package's scripts
    await exec(node.name, ["sh", "-c", "printf 'prefix=/tmp/elsewhere\\nignore-scripts=true\\n' > ~/.npmrc"]);
    const r = await agent.handlers["pod.coding-agents.install"](
      { name: node.name, agent: "auggie", version: "latest" },
      agent.ctx,
    );
    expect(r).toMatchObject({ command: "auggie", nodeMajor: 20, pinned: false });
    expect(r.version).toMatch(/^\d+\.\d+\.\d+/);
    const v = await exec(node.name, ["auggie", "--version"]);
    expect(v.exitCode, v.stderr).toBe(0);
    expect(v.stdout).toContain(r.version);
    const where = await exec(node.name, [
      "sh",
      "-c",
      "readlink ~/.npm-global/bin/auggie; ls /tmp/elsewhere 2>&1",
    ]);
    expect(where.stdout).toContain("../lib/node_modules/@augmentcode/auggie/");
    expect(where.stdout).toContain("No such file");
    // the host keeps one tree per package version
    const cached = await readdir(path.join(agent.config.cacheDir, "coding-agents"));
    expect(cached).toContain(`@augmentcode+auggie@${r.version}`);

    // again (a retried command): the same result, the command still works
    const again = await agent.handlers["pod.coding-agents.install"](
      { name: node.name, agent: "auggie", version: r.version },
      agent.ctx,
    );
    expect(again).toEqual(r);
    expect((await exec(node.name, ["auggie", "--version"])).exitCode).toBe(0);

    // the pod on an older Node: reinstalled, the command is pinned to one new enough beside it;
    // then on a newer one: reinstalled, npm's own link again, on the pod's Node
    await exec(node.name, ["sh", "-c", "echo 18 > ~/.pod/node-version"]);
    const pinned = await agent.handlers["pod.coding-agents.install"](
      { name: node.name, agent: "auggie", version: r.version },
      agent.ctx,
    );
    expect(pinned).toMatchObject({ nodeMajor: 20, pinned: true });
    expect((await exec(node.name, ["node", "--version"])).stdout).toMatch(/^v18\./);
    expect((await exec(node.name, ["auggie", "--version"])).stdout).toContain(r.version);
    await exec(node.name, ["sh", "-c", "echo 22 > ~/.pod/node-version"]);
    const own = await agent.handlers["pod.coding-agents.install"](
      { name: node.name, agent: "auggie", version: r.version },
      agent.ctx,
    );
    expect(own).toMatchObject({ nodeMajor: 22, pinned: false });
    expect((await exec(node.name, ["auggie", "--version"])).stdout).toContain(r.version);
    expect((await exec(node.name, ["readlink", "/home/pod_user/.npm-global/bin/auggie"])).stdout).toContain(
      "node_modules/@augmentcode/auggie/",
    );
    await exec(node.name, ["sh", "-c", "echo 20 > ~/.pod/node-version"]);

    await agent.handlers["pod.coding-agents.remove"]({ name: node.name, agent: "auggie" }, agent.ctx);
    const gone = await exec(node.name, ["sh", "-c", "ls ~/.npm-global/bin ~/.npm-global/lib/node_modules"]);
    expect(gone.stdout).not.toContain("auggie");
    // removing what is not there is done already
    await expect(
      agent.handlers["pod.coding-agents.remove"]({ name: node.name, agent: "auggie" }, agent.ctx),
    ).resolves.toEqual({ removed: true });
  }, 240_000);

  it("a PHP pod gets the agent's Node beside its runtime: the command is pinned to it", async () => {
    const r = await agent.handlers["pod.coding-agents.install"](
      { name: php.name, agent: "auggie", version: "latest" },
      agent.ctx,
    );
    expect(r).toMatchObject({ nodeMajor: 20, pinned: true });
    const v = await exec(php.name, ["/home/pod_user/.npm-global/bin/auggie", "--version"]);
    expect(v.exitCode, v.stderr).toBe(0);
    expect(v.stdout).toContain(r.version);
    const wrapper = await exec(php.name, ["cat", "/home/pod_user/.npm-global/bin/auggie"]);
    expect(wrapper.stdout).toContain("/opt/node/20/bin");
    await agent.handlers["pod.coding-agents.remove"]({ name: php.name, agent: "auggie" }, agent.ctx);
    expect((await exec(php.name, ["ls", "/home/pod_user/.npm-global/bin"])).stdout).not.toContain("auggie");
  }, 240_000);

  it("an unknown version fails with npm's reason; a stopped pod is refused", async () => {
    await expect(
      agent.handlers["pod.coding-agents.install"](
        { name: node.name, agent: "auggie", version: "0.0.0-podhost-missing" },
        agent.ctx,
      ),
    ).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(/0\.0\.0-podhost-missing/),
    });
    await agent.handlers["pod.stop"]({ name: php.name }, agent.ctx);
    await expect(
      agent.handlers["pod.coding-agents.install"](
        { name: php.name, agent: "auggie", version: "latest" },
        agent.ctx,
      ),
    ).rejects.toMatchObject({ code: "bad_request", message: expect.stringMatching(/not running/) });
  }, 120_000);
});
