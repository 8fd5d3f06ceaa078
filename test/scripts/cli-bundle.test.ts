import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, REPO_ROOT } from "../../scripts/build-cli";

/**
 * The CLI's entry (scripts/build-cli.ts, docs/cli.md "Start-up"): `podhost --version` must answer
 * before Node starts its ES module loader, which an ES module entry always pays for; every other
 * command still reaches the command table, an ES module, through `import()`.
 */
describe("the CLI bundle's entry", () => {
  let bin: string;
  let work: string;
  let preload: string;

  beforeAll(async () => {
    bin = await buildCli();
    work = await mkdtemp(path.join(tmpdir(), "podhost-cli-bundle-"));
    preload = path.join(work, "esm-internals.cjs");
    // the ES module internals Node loaded during the run, as the last line of stderr
    await writeFile(
      preload,
      `process.on("exit", () => process.stderr.write("\\n" + JSON.stringify(process.moduleLoadList.filter((m) => m.includes("/esm/")))));`,
    );
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** the CLI run with `args`: its stdout, its status and whether Node's ES module loader started */
  const podhost = (args: string[]) => {
    const run = spawnSync(process.execPath, ["--require", preload, bin, ...args], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: work, NO_COLOR: "1" },
    });
    const internals = JSON.parse(run.stderr.trim().split("\n").at(-1) ?? "[]") as string[];
    return {
      stdout: run.stdout,
      status: run.status,
      esmLoader: internals.some((m) => m.endsWith("esm/loader")),
    };
  };

  it("prints the version without starting the ES module loader", async () => {
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, "cli", "package.json"), "utf8"));
    for (const flag of ["--version", "-V"])
      expect(podhost([flag])).toEqual({ stdout: `${version}\n`, status: 0, esmLoader: false });
  });

  it("reaches the command table, an ES module, for any other command", () => {
    const help = podhost(["--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("Usage: podhost");
    expect(help.esmLoader).toBe(true);
  });
});
