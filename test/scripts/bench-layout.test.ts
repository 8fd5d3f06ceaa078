import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");
const BENCH = path.join(ROOT, "bench");
const TSX = path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");

/** The benches bench/run.ts offers, from its answer to a name it does not know. */
function offered(): string[] {
  const r = spawnSync(process.execPath, [TSX, path.join(BENCH, "run.ts"), "no-such-bench"], {
    encoding: "utf8",
    timeout: 90_000,
  });
  expect(r.status).toBe(2);
  const listed = /available: (.*)\)/.exec(r.stderr)?.[1];
  expect(listed, r.stderr).toBeDefined();
  return (listed ?? "").split(", ");
}

describe("bench/ layout", { timeout: 120_000 }, () => {
  it("bench/run.ts offers every bench/<name>.ts and none of the parts in a bench's folder", () => {
    const names = offered();
    for (const split of ["lifecycle", "scale", "density", "deploy", "soak"]) {
      expect(names).toContain(split);
      expect(statSync(path.join(BENCH, split)).isDirectory()).toBe(true);
      for (const part of readdirSync(path.join(BENCH, split))) {
        expect(names).not.toContain(part.replace(/\.ts$/, ""));
      }
    }
    expect(names).not.toContain("run");
    expect(names).not.toContain("stats");
    expect(names.every((n) => !n.includes("/"))).toBe(true);
  });
});
