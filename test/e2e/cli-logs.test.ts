import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "../../scripts/build-cli";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * `podhost logs --since/--until` (docs/cli.md, docs/logs.md): the built CLI against the real Worker
 * + agent + Docker reads the log history the host keeps, within the range it was asked for.
 */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const POD = "clihist";

describe("podhost logs --since/--until", () => {
  let stack: Stack;
  let alice: Awaited<ReturnType<typeof signUp>>;
  let bundle: string;
  let home: string;

  const cli = (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        XDG_CONFIG_HOME: path.join(home, "config"),
        HOME: home,
        PODHOST_API: stack.api,
        PODHOST_TOKEN: alice.token,
        NO_COLOR: "1",
      };
      const child = spawn(process.execPath, [bundle, ...args], {
        cwd: home,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  const json = (run: Run) => {
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as { lines: string[]; source: string; message?: string };
  };

  beforeAll(async () => {
    bundle = await buildCli();
    stack = await startStack("cli-logs");
    alice = await signUp(stack.api, "Alice");
    home = await mkdtemp(path.join(tmpdir(), "podhost-cli-logs-"));
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [[POD, "static"]]);
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("reads the history of a range, and nothing of a range before the lines were written", {
    timeout: 120_000,
  }, async () => {
    const before = new Date(Date.now() - 60_000).toISOString();
    const wrote = await alice.api.post(`/api/pods/${POD}/exec`, {
      command: [
        "sh",
        "-c",
        "mkdir -p ~/logs && printf 'GET /one 200\\nGET /needle 503\\n' >> ~/logs/web.log",
      ],
    });
    expect(wrote.body.exit_code, JSON.stringify(wrote.body)).toBe(0);

    // a duration before now: the read collects the new lines and answers them
    const all = json(await cli(["logs", POD, "--source", "web", "--since", "1h", "--json"]));
    expect(all.lines).toEqual(expect.arrayContaining(["GET /one 200", "GET /needle 503"]));
    // filtered, with both ends as times with their zone
    const until = new Date(Date.now() + 60_000).toISOString();
    const matched = json(
      await cli([
        "logs",
        POD,
        "--source",
        "web",
        "--grep",
        "needle",
        "--since",
        before,
        "--until",
        until,
        "--json",
      ]),
    );
    expect(matched.lines).toEqual(["GET /needle 503"]);
    // a range that ended before the lines were written has none of them
    const old = json(await cli(["logs", POD, "--source", "web", "--since", "2d", "--until", "1d", "--json"]));
    expect(old.lines).toEqual([]);
  });

  it("refuses a time it cannot read, a range backwards and a range with -f, with 2 and before any request", async () => {
    for (const args of [
      ["--since", "yesterday"],
      ["--since", "2026-11-27T12:00:00"],
      ["--since", "1h", "--until", "2h"],
      ["--since", "1h", "-f"],
    ]) {
      const run = await cli(["logs", POD, "--source", "web", ...args]);
      expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/--since|--until/);
    }
    // a day is its start in UTC: the API answers (an empty range of the pod's history)
    expect(
      json(
        await cli([
          "logs",
          POD,
          "--source",
          "web",
          "--since",
          "2020-01-01",
          "--until",
          "2020-01-02",
          "--json",
        ]),
      ).lines,
    ).toEqual([]);
  });
});
