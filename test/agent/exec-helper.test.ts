import { type ChildProcess, spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDockerClient } from "../../agent/docker/client";
import { DEFAULT_MAX_OUTPUT_BYTES, execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { SH } from "../../agent/docker/pod-bin";
import { DOCKER_RUNC_ROOT, RuncContainers } from "../../agent/docker/runc";
import { AgentError } from "../../agent/errors";
import { runCommand } from "../../agent/inside/command";
import { ExecHelpers } from "../../agent/inside/exec-helper";
import { createLogger } from "../../agent/logger";
import { DOCKER_SOCKET, removePrefix, startBareContainer } from "./helpers";

/**
 * The pod's command helper (agent/inside/exec-helper.ts): one `runc exec` per pod, a fork per
 * command, with what the command runner promised before (argv as pod_user on the pod's PATH, the
 * workdir entered as pod_user, timeout's group kill, capped streams, a background child not holding
 * the answer); and, as it runs in the tenant's pod, a helper that dies or lies is survived.
 */

const IMAGE = "podhost/nodejs:latest";
const PLANT = `mkdir -p ~/.npm-global/bin ~/app ~/locked && chmod 0 ~/locked &&
printf '#!/bin/sh\\necho PLANTED\\n' > ~/.npm-global/bin/sh && chmod +x ~/.npm-global/bin/sh`;
const log = createLogger({}, true);

/** a RuncContainers whose "pod" is a local process: the helper is whatever `script` is */
class FakeRunc extends RuncContainers {
  constructor(private readonly script: string) {
    super(createDockerClient(DOCKER_SOCKET), "/nonexistent");
  }
  override spawn(): ChildProcess {
    return spawn("python3", ["-c", this.script], { stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"] });
  }
}

describe("the pod's command helper", () => {
  const docker = createDockerClient(DOCKER_SOCKET);
  const prefix = `phh${Math.random().toString(36).slice(2, 8)}`;
  const pod = "helped";
  const names = podNames(prefix, pod);
  let runc: RuncContainers;
  let helpers: ExecHelpers;
  let runcKnown = false;
  const exec = (
    command: string[],
    more: { workdir?: string; timeoutS?: number; signal?: AbortSignal } = {},
  ) =>
    runCommand(
      docker,
      runc,
      helpers,
      prefix,
      pod,
      { command, workdir: more.workdir, timeoutS: more.timeoutS ?? 30 },
      more.signal ?? new AbortController().signal,
    );
  const until = async (what: string, ok: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await ok()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`still not ${what} after 10 s`);
  };
  /** a pod's first command goes the old way and starts the helper beside it: wait for it */
  const warm = async () => {
    const id = (await runc.idOf(names.container)) ?? "";
    expect((await exec(["true"])).exitCode).toBe(0);
    await until("ready", () => helpers.isReady(id));
  };
  const helperPids = async () =>
    (await execInContainer(docker, names.container, ["pgrep", "-f", "^/usr/bin/python3 -I -S -c"])).stdout
      .split("\n")
      .filter(Boolean);

  beforeAll(async () => {
    runcKnown = await access(DOCKER_RUNC_ROOT).then(
      () => true,
      () => false,
    );
    await startBareContainer(docker, names, prefix, IMAGE);
    const planted = await execInContainer(docker, names.container, [SH, "-c", PLANT], { user: "1000:1000" });
    expect(planted.exitCode, planted.stderr).toBe(0);
    runc = new RuncContainers(docker, DOCKER_RUNC_ROOT);
    helpers = new ExecHelpers(runc, log);
  });

  afterAll(async () => {
    helpers?.close();
    await removePrefix(docker, prefix);
  });

  it("runs each command as pod_user on the pod's PATH, in its workdir, through one helper", async (t) => {
    if (!runcKnown) t.skip();
    await warm();
    const r = await exec(["sh", "-c", "echo not-planted"]);
    // `sh` is looked up on the pod's own PATH, where the user planted one: the user's argv, their PATH
    expect(r).toMatchObject({ exitCode: 0, stdout: "PLANTED\n", timedOut: false });
    const who = await exec(["/bin/sh", "-c", 'id -u; echo "$HOME"; pwd; /bin/cat; echo end; exit 3']);
    expect(who).toMatchObject({ exitCode: 3, stdout: "1000\n/home/pod_user\n/home/pod_user/app\nend\n" });
    expect((await exec(["pwd"], { workdir: "/tmp" })).stdout).toBe("/tmp\n");
    // argv is never parsed by a shell, bytes included
    expect((await exec(["echo", "$(id)", ";", "*", "é\n2"])).stdout).toBe("$(id) ; * é\n2\n");
    expect((await exec(["definitely-not-a-program"])).exitCode).toBe(127);
    expect((await exec(["/bin/sh", "-c", "kill -9 $$"])).exitCode).toBe(137);
    expect(helpers.size).toBe(1);
    expect(await helperPids()).toHaveLength(1);
  });

  it("refuses a workdir the pod user cannot enter", async (t) => {
    if (!runcKnown) t.skip();
    for (const workdir of ["/home/pod_user/locked", "/home/pod_user/nope", "/home/pod_user/.profile"]) {
      const refused = await exec(["pwd"], { workdir }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(AgentError);
      expect((refused as AgentError).code).toBe("bad_request");
    }
  });

  it("caps each stream and counts the rest", async (t) => {
    if (!runcKnown) t.skip();
    const r = await exec(["/bin/sh", "-c", "head -c 3000000 /dev/zero; head -c 1500000 /dev/zero >&2"]);
    expect(r.exitCode).toBe(0);
    const omitted = (s: string) => Number(/\[output truncated: (\d+) bytes omitted\]$/.exec(s)?.[1]);
    expect(omitted(r.stdout)).toBeGreaterThanOrEqual(3_000_000 - DEFAULT_MAX_OUTPUT_BYTES);
    expect(omitted(r.stderr)).toBeGreaterThanOrEqual(1_500_000 - DEFAULT_MAX_OUTPUT_BYTES);
  });

  it("ends a command at its timeout with its children, and answers though a background child holds the output", async (t) => {
    if (!runcKnown) t.skip();
    const timed = await exec(["/bin/sh", "-c", "sleep 31 & sleep 31; echo never"], { timeoutS: 1 });
    expect(timed).toMatchObject({ exitCode: 124, timedOut: true, stdout: "" });
    const left = await execInContainer(docker, names.container, ["pgrep", "-c", "-f", "^sleep 31"]);
    expect(left.stdout.trim()).toBe("0");
    const started = Date.now();
    const bg = await exec(["/bin/sh", "-c", "sleep 32 & echo started"]);
    expect(bg).toMatchObject({ exitCode: 0, stdout: "started\n" });
    expect(Date.now() - started).toBeLessThan(10_000);
    await execInContainer(docker, names.container, ["pkill", "-f", "^sleep 32"]);
  });

  it("an aborted command is killed in the pod; the helper goes on", async (t) => {
    if (!runcKnown) t.skip();
    const ac = new AbortController();
    const running = exec(["sleep", "33"], { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 500));
    ac.abort(new Error("caller gone"));
    await expect(running).rejects.toThrow("caller gone");
    for (let i = 0; i < 50; i++) {
      const left = await execInContainer(docker, names.container, ["pgrep", "-c", "-f", "^sleep 33"]);
      if (left.stdout.trim() === "0") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(
      (await execInContainer(docker, names.container, ["pgrep", "-c", "-f", "^sleep 33"])).stdout.trim(),
    ).toBe("0");
    expect((await exec(["true"])).exitCode).toBe(0);
  });

  it("the tenant killing the helper fails its running command once (never run again) and the next starts a new one", async (t) => {
    if (!runcKnown) t.skip();
    const marker = `/tmp/ran-${Date.now()}`;
    // its failure is caught from the start: it comes while the pkill below is awaited
    const running = exec(["/bin/sh", "-c", `echo x >> ${marker}; sleep 34`]).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 500));
    await execInContainer(docker, names.container, ["pkill", "-9", "-f", "^/usr/bin/python3 -I -S -c"], {
      user: "1000:1000",
    });
    const failed = await running;
    expect(failed).toBeInstanceOf(AgentError);
    expect((failed as AgentError).code).toBe("unavailable");
    expect((await exec(["cat", marker])).stdout).toBe("x\n");
    await warm();
    expect(await helperPids()).toHaveLength(1);
    await execInContainer(docker, names.container, ["pkill", "-f", "sleep 34"]);
  });

  it("lets an idle helper go", async (t) => {
    if (!runcKnown) t.skip();
    const quick = new ExecHelpers(runc, log, 1000);
    const id = (await runc.idOf(names.container)) ?? "";
    const q = {
      command: ["true"],
      workdir: "/tmp",
      timeoutS: 5,
      maxOutputBytes: 1024,
      signal: new AbortController().signal,
    };
    // no helper yet: the caller runs the command the old way, then starts one
    expect(await quick.run(id, q)).toEqual({ kind: "not-started" });
    expect(quick.size).toBe(0);
    quick.start(id);
    await until("ready", () => quick.isReady(id));
    expect((await quick.run(id, q)).kind).toBe("done");
    expect(quick.size).toBe(1);
    await until("let go", () => quick.size === 0);
    await until("gone from the pod", async () => (await helperPids()).length === 1);
    expect(await helperPids()).toHaveLength(1); // only the shared one of the tests above
  });
});

describe("a helper that breaks the protocol (it runs in the tenant's pod)", () => {
  const q = {
    command: ["true"],
    workdir: "/tmp",
    timeoutS: 5,
    maxOutputBytes: 1024,
    signal: new AbortController().signal,
  };
  /** `script` as a ready helper, sent one command */
  const run = async (script: string) => {
    const helpers = new ExecHelpers(new FakeRunc(script), log);
    helpers.start("c1");
    for (let i = 0; i < 200 && !helpers.isReady("c1"); i++) await new Promise((r) => setTimeout(r, 50));
    return helpers.run("c1", q);
  };
  const READY = `import os,time\nos.write(4, b'{"ready":1}\\n')\nos.read(3, 65536)\n`;

  it("is stopped on a line over the limit or that is no JSON object; a command it may have started is not run again", async () => {
    const flood = `${READY}while True: os.write(4, b"a" * 65536)`;
    await expect(run(flood)).rejects.toMatchObject({ code: "unavailable" });
    const junk = `${READY}os.write(4, b'[1,2]\\n')\ntime.sleep(30)`;
    await expect(run(junk)).rejects.toMatchObject({ code: "unavailable" });
    const lies = `${READY}os.write(4, b'{"id":1,"x":9999,"om":[-5,"a"]}\\n')\ntime.sleep(30)`;
    await expect(run(lies)).rejects.toMatchObject({ code: "internal" });
  });

  it("one that ends before it is ready: the pod's commands run the old way, and no helper is tried again", async () => {
    const helpers = new ExecHelpers(new FakeRunc("import sys; sys.exit(1)"), log);
    helpers.start("c1");
    expect(helpers.size).toBe(1);
    expect(await helpers.run("c1", q)).toEqual({ kind: "not-started" });
    for (let i = 0; i < 200 && helpers.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(helpers.size).toBe(0);
    helpers.start("c1");
    expect(await helpers.run("c1", q)).toEqual({ kind: "not-started" });
    expect(helpers.size).toBe(0);
  });
});
