import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * One capability, one name, five layers: a reader finds an endpoint's service, wire op, handler and
 * test by the capability's name alone (docs/adding-a-capability.md). A Node test because workerd
 * tests cannot read the file system.
 */

const root = join(import.meta.dirname, "..");
const dirsIn = (dir: string) =>
  readdirSync(join(root, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
const filesIn = (dir: string) =>
  readdirSync(join(root, dir), { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
const exists = (path: string) => existsSync(join(root, path));

/** Route folders that are no capability: the OpenAPI document and its reference page. */
const NOT_CAPABILITIES = new Set(["docs"]);
/** shared/protocol/ files that are the protocol itself rather than one capability's ops (lazy: the schemas built on first use; pod-name: the name every group shares). */
const PROTOCOL_CORE = new Set(["index", "messages", "ops", "lazy", "pod-name"]);

const capabilities = dirsIn("worker/routes").filter((name) => !NOT_CAPABILITIES.has(name));
const opModules = filesIn("shared/protocol")
  .filter((f) => f.endsWith(".ts"))
  .map((f) => f.slice(0, -3))
  .filter((name) => !PROTOCOL_CORE.has(name));

describe("the layout", () => {
  it("finds the capabilities (the lists below are not empty by accident)", () => {
    expect(capabilities).toEqual(expect.arrayContaining(["pods", "files", "inside", "zip", "ssh"]));
    expect(opModules).toEqual(expect.arrayContaining(["files", "inside", "zip", "ssh", "health"]));
  });

  it.each(capabilities)("worker/routes/%s/ has a service folder of its name", (name) => {
    expect(exists(`worker/services/${name}`), `worker/services/${name}/`).toBe(true);
  });

  it.each(capabilities)(
    "worker/routes/%s/ has a test file of its name in test/{worker,agent,e2e}/",
    (name) => {
      const tests = ["worker", "agent", "e2e"].map((side) => `test/${side}/${name}.test.ts`);
      expect(tests.filter(exists), tests.join(" or ")).not.toEqual([]);
    },
  );

  it.each(opModules)("shared/protocol/%s.ts has a handler module of its name in agent/handlers/", (name) => {
    expect(exists(`agent/handlers/${name}.ts`), `agent/handlers/${name}.ts`).toBe(true);
  });
});
