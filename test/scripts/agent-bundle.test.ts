import { execFileSync, spawnSync } from "node:child_process";
import { copyFile, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENT_BUNDLE, AGENT_NODE_FLAGS, agentNode, buildAgent, REPO_ROOT } from "../../scripts/build-agent";
import { builtinsByRequire, shareEsmViews } from "../../scripts/build-agent-plugins";

/**
 * What loading the compiled agent evaluates (scripts/build-agent.ts, docs/decisions/compiled-agent.md):
 * the bundle is imported on the agent's Node by a script that is not its entry point (so no agent
 * starts), and the built-in modules Node loaded for it are listed.
 */
function builtinsLoadedBy(file: string): string[] {
  const script = `const before = new Set(process.moduleLoadList);
    await import(${JSON.stringify(pathToFileURL(file).href)});
    console.log(JSON.stringify(process.moduleLoadList.filter((m) => !before.has(m))));`;
  const out = execFileSync(agentNode(), ["--input-type=module", "-e", script], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, PODHOST_API_URL: "", PODHOST_AGENT_TOKEN: "" },
  });
  return (JSON.parse(out.trim().split("\n").at(-1) ?? "[]") as string[]).map((m) =>
    m.replace(/^NativeModule /, ""),
  );
}

/**
 * How many zod schemas (objects with zod's `_zod` internals) are alive once the file is loaded, from a
 * heap snapshot taken on the agent's Node (the snapshot collects garbage first).
 */
function zodSchemasAliveAfterLoading(file: string): number {
  const script = `import v8 from "node:v8";
    await import(${JSON.stringify(pathToFileURL(file).href)});
    const snap = JSON.parse(await new Response(v8.getHeapSnapshot()).text());
    const { edge_fields, edge_types } = snap.snapshot.meta;
    const type = edge_fields.indexOf("type"), name = edge_fields.indexOf("name_or_index");
    const property = edge_types[0].indexOf("property"), zod = snap.strings.indexOf("_zod");
    let n = 0;
    for (let i = 0; i < snap.edges.length; i += edge_fields.length)
      if (snap.edges[i + type] === property && snap.edges[i + name] === zod) n++;
    console.log(n);`;
  const out = execFileSync(agentNode(), [...AGENT_NODE_FLAGS, "--input-type=module", "-e", script], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, PODHOST_API_URL: "", PODHOST_AGENT_TOKEN: "" },
  });
  return Number(out.trim().split("\n").at(-1));
}

describe("the agent bundle's load", () => {
  beforeAll(async () => {
    await buildAgent();
  });

  it("does not evaluate undici (node:http's lazy WebSocket getters) nor HTTP/2", () => {
    const loaded = builtinsLoadedBy(AGENT_BUNDLE);
    // the bundle did load: its HTTP client and child processes are there
    expect(loaded).toContain("http");
    expect(loaded).toContain("child_process");
    expect(loaded.filter((m) => /undici|http2/.test(m))).toEqual([]);
  });

  it("builds no op's schemas and keeps no configuration schema: only the control messages' are alive", () => {
    // the control plane's messages to the agent, the pod state of its hello, the error codes: ~50;
    // every op's and every capability's (backups, deploys, …) were built at load before, ~1,250
    const alive = zodSchemasAliveAfterLoading(path.join(path.dirname(AGENT_BUNDLE), "agent.js"));
    expect(alive).toBeGreaterThan(0);
    expect(alive).toBeLessThan(100);
  });

  it("its entry turns on Node's compile cache: a second start reads the bundle's code from it", async () => {
    // a copy, so the shared dist/agent/compile-cache is not what is looked at
    const dir = await mkdtemp(path.join(tmpdir(), "podhost-agent-bundle-"));
    try {
      for (const file of ["main.js", "agent.js"])
        await copyFile(path.join(path.dirname(AGENT_BUNDLE), file), path.join(dir, file));
      const load = () => {
        const run = spawnSync(
          agentNode(),
          [
            "--input-type=module",
            "-e",
            `await import(${JSON.stringify(pathToFileURL(path.join(dir, "main.js")).href)})`,
          ],
          { cwd: REPO_ROOT, encoding: "utf8", env: { ...process.env, NODE_DEBUG_NATIVE: "COMPILE_CACHE" } },
        );
        expect(run.status, run.stderr).toBe(0);
        return `${run.stdout}\n${run.stderr}`;
      };
      const first = load();
      expect(first).not.toMatch(/agent\.js was accepted/);
      const [cache] = await readdir(path.join(dir, "compile-cache"));
      expect(await readdir(path.join(dir, "compile-cache", cache ?? ""))).not.toEqual([]);
      expect(load()).toMatch(/cache for file:\/\/\S+\/agent\.js was accepted/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("on the agent's flags nothing is TurboFan-compiled: the bundle loaded, then a function run hot", () => {
    // V8's optimization status, bit 6: the function runs TurboFan's code (V8 12's runtime-test.h)
    const TURBOFANNED = 1 << 6;
    const script = `await import(${JSON.stringify(pathToFileURL(path.join(path.dirname(AGENT_BUNDLE), "agent.js")).href)});
      function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += i * 2; return s; }
      const until = Date.now() + 300;
      while (Date.now() < until) hot(1000);
      console.log(%GetOptimizationStatus(hot));`;
    const status = (flags: string[]) => {
      const out = execFileSync(
        agentNode(),
        [...flags, "--allow-natives-syntax", "--input-type=module", "-e", script],
        {
          cwd: REPO_ROOT,
          encoding: "utf8",
          env: { ...process.env, PODHOST_API_URL: "", PODHOST_AGENT_TOKEN: "" },
        },
      );
      return Number(out.trim().split("\n").at(-1));
    };
    // the check sees TurboFan where it runs: without the agent's flags the same function gets there
    expect(status([]) & TURBOFANNED).toBe(TURBOFANNED);
    expect(status(AGENT_NODE_FLAGS) & TURBOFANNED).toBe(0);
  });

  it("two files importing one CommonJS module (a built-in) share one view of its exports", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "podhost-esm-views-"));
    try {
      await writeFile(path.join(dir, "a.js"), 'import * as fs from "node:fs"; export const a = fs;');
      await writeFile(path.join(dir, "b.js"), 'import * as fs from "node:fs"; export const b = fs;');
      await writeFile(path.join(dir, "entry.js"), 'export { a } from "./a.js"; export { b } from "./b.js";');
      const result = await build({
        entryPoints: [path.join(dir, "entry.js")],
        bundle: true,
        platform: "node",
        format: "esm",
        write: false,
        plugins: [builtinsByRequire],
        banner: {
          js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);',
        },
        minifyWhitespace: true,
        minifySyntax: true,
        logLevel: "silent",
      });
      const bundled = path.join(dir, "bundle.mjs");
      await writeFile(bundled, shareEsmViews(result.outputFiles[0]?.text ?? ""));
      const { a, b } = (await import(pathToFileURL(bundled).href)) as { a: unknown; b: unknown };
      expect(a).toBe(b);
      expect((a as { readFileSync: unknown }).readFileSync).toBeTypeOf("function");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
