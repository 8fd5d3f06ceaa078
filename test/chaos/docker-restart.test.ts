import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { createRunningPods, waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type ClientKey, makeKey, sshRun } from "../e2e/support/ssh";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { servedThroughEdge } from "./support";

const run = promisify(execFile);

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * The Docker engine restarted under running pods (docs/reliability.md). ONLY in `npm run chaos`,
 * never in `npm test`: the engine's restart stops every container on this machine for its few
 * seconds, other test runs' too. The engine is the one scripts/host/ensure-docker.sh started (its
 * pid in /var/run/docker.pid); it is stopped with SIGTERM, as `systemctl restart docker` would, and
 * started again by that script. The pods come back `running`, serving through the ingress and
 * reachable over SSH, and the agent works with the engine again without being restarted.
 */
describe("chaos: the Docker engine restarted under running pods", () => {
  let stack: Stack;
  let alice: User;
  let ports: Record<string, number>;
  let key: ClientKey;
  const knownHosts = path.join(tmpdir(), `podhost-chaos-known-${process.pid}`);
  const names = (): [string, string] => [
    `dk-static-${stack.prefix.slice(-4)}`,
    `dk-node-${stack.prefix.slice(-4)}`,
  ];
  /** the engine's stop, start and the pods' restart policy, on a loaded 2-core machine */
  const BACK_WITHIN_MS = 180_000;

  beforeAll(async () => {
    stack = await startStack("chaosdk");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    const [staticPod, nodePod] = names();
    ports = await createRunningPods(alice.api, [
      [staticPod, "static"],
      [nodePod, "nodejs"],
    ]);
    key = await makeKey("chaos@e2e");
    for (const name of names()) {
      const added = await alice.api.post(`/api/pods/${name}/ssh/keys`, { key: key.publicKey });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
    }
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    await rm(knownHosts, { force: true });
  });

  it("the pods come back running, served and reachable over SSH; the agent uses the new engine", {
    timeout: 600_000,
  }, async () => {
    const pid = Number((await readFile("/var/run/docker.pid", "utf8")).trim());
    expect(pid).toBeGreaterThan(1);
    process.kill(pid, "SIGTERM");
    await waitFor(
      "the engine to stop",
      async () => {
        try {
          process.kill(pid, 0);
          return undefined;
        } catch {
          return true;
        }
      },
      120_000,
    );
    const started = Date.now();
    await run("bash", ["scripts/host/ensure-docker.sh"], { timeout: 180_000 });
    for (const name of names()) {
      const pod = await waitForPodStatus(alice.api, name, "running", BACK_WITHIN_MS);
      expect(pod.status).toBe("running");
      await servedThroughEdge(stack, name, { withinMs: BACK_WITHIN_MS });
      const ssh = await waitFor(
        `${name} over SSH`,
        async () => {
          const r = await sshRun(key, ports[name] ?? 0, "whoami", knownHosts);
          return r.code === 0 ? r : undefined;
        },
        BACK_WITHIN_MS,
      );
      expect(ssh.stdout.trim()).toBe("pod_user");
    }
    // the agent talks to the new engine: a command that needs it works (exec in the pod)
    const exec = await alice.api.post(`/api/pods/${names()[0]}/exec`, { command: ["echo", "back"] });
    expect(exec.status, JSON.stringify(exec.body)).toBe(200);
    expect(exec.body.stdout.trim()).toBe("back");
    console.info(
      `the pods were back within ${Math.round((Date.now() - started) / 1000)} s of the engine's start`,
    );
  });
});
