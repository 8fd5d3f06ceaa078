import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENT_BUNDLE, agentNode, buildAgent, REPO_ROOT } from "../../scripts/build-agent";

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
});
