import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../agent/config";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { type OwnEngine, startOwnEngine } from "../support/own-engine";
import { backupSettled, printOnFailure, staticPodFiles } from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * Disk full, the engine's root (docs/reliability.md "Disk full"): the machine's engine is shared by
 * every test and agent here, so this test starts an engine of its own (../support/own-engine.ts),
 * its data root on a 2 GiB ext4 it makes, loads the static image into it and points a stack's agent
 * at it. Then it fills that disk: a create, which needs the engine to write (a container's layer, a
 * volume's record), fails naming the engine's disk and leaves nothing half made; the pod already
 * running keeps serving through the edge, and its files (on the pods' disk, not the engine's) still
 * take writes. Once the space is back a create works again.
 */
describe("chaos: the engine's disk full", () => {
  let engine: OwnEngine | undefined;
  let stack: Stack | undefined;
  let alice: User;
  let pod: string;

  const IMAGE = loadConfig({}).images.static;
  const PAGE = "<h1>still here</h1>";

  beforeAll(async () => {
    engine = await startOwnEngine(2048);
    await engine.load([IMAGE]);
    stack = await startStack("engfull", {
      agentEnv: { PODHOST_DOCKER_SOCKET: engine.socket, PODHOST_RUNC_ROOT: engine.runcRoot },
    });
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `eng-${stack.prefix.slice(-4)}`;
    await create(alice.api, pod);
    await waitForPodStatus(alice.api, pod, "running", 120_000);
    await write(pod, "index.html", PAGE);
    await serves(pod);
  }, 300_000);

  afterAll(async () => {
    // the agent first (it would make again what goes next), then what its engine holds, the stack
    // (the pods' homes, its ingress), and the engine with its disk
    await stack?.agent.stop().catch(() => undefined);
    await engine?.stop().catch((err: unknown) => console.error("engine stop:", err));
    await stack?.stop().catch((err: unknown) => console.error("stack stop:", err));
  }, 300_000);

  afterEach(async (ctx) => {
    printOnFailure(ctx, stack, (l) => l.level === "error" || l.level === "warn");
    if (ctx.task.result?.state === "fail" && engine) console.error(await engine.logTail());
  });

  const { create, write, read, serves } = staticPodFiles(
    () => stack?.edgePort ?? 0,
    () => alice.api,
  );

  /** a new pod, until it is `running` or `error`; its events' messages */
  const createSettled = async (name: string) => {
    await create(alice.api, name);
    const settled = await waitFor(
      `${name} to settle`,
      async () => {
        const res = await alice.api.get(`/api/pods/${name}`);
        return ["running", "error"].includes(res.body?.status) ? res.body : undefined;
      },
      180_000,
    );
    const events = await alice.api.get(`/api/pods/${name}/events`);
    const messages = (events.body.events as { message: string }[]).map((e) => e.message).join("\n");
    return { status: settled.status as string, messages };
  };

  const backUp = async (name: string) => {
    const res = await alice.api.post(`/api/pods/${name}/backups`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return backupSettled(alice.api, name, res.body.id as string, 240_000);
  };

  /** what the engine holds of a pod (`<prefix>-<pod>…`): containers, volumes, networks */
  const objectsOf = async (name: string) => {
    const own = engine as OwnEngine;
    const filter = ["--filter", `name=${stack?.prefix}-${name}`];
    const lists = await Promise.all([
      own.docker(["ps", "-aq", ...filter]),
      own.docker(["volume", "ls", "-q", ...filter]),
      own.docker(["network", "ls", "-q", ...filter]),
    ]);
    return lists.join("").split("\n").filter(Boolean);
  };

  it("a create and a backup fail naming the engine's disk, leaving nothing; the pod serves and takes writes; freed, both work", {
    timeout: 600_000,
  }, async () => {
    const own = engine as OwnEngine;
    const failedName = `eng2-${stack?.prefix.slice(-4)}`;
    const containers = await own.docker(["ps", "-aq"]);
    const volumes = await own.docker(["volume", "ls", "-q"]);
    const networks = await own.docker(["network", "ls", "-q"]);
    try {
      expect(await own.fill()).toBe(0);
      const failed = await createSettled(failedName);
      expect(failed.status, failed.messages).toBe("error");
      expect(failed.messages).toMatch(
        /the engine's disk is full \(no space left where the host keeps images and containers\)/,
      );
      // the engine's words name the host's paths: they stay in the agent's log
      expect(failed.messages).not.toContain(own.dataRoot);
      expect(failed.messages).not.toContain("overlay2");
      // nothing half made is left on the engine
      expect(await objectsOf(failedName)).toEqual([]);
      // the running pod does not need the engine's disk to serve, nor to write its files (they are
      // on the pods' disk)
      await serves(pod);
      await write(pod, "notes.txt", "during\n");
      expect(await read(pod, "notes.txt")).toBe("during\n");
      await serves(pod);
      // a backup's test-restore runs in a container of its own, which needs a layer on the engine's disk
      const failedBackup = await backUp(pod);
      expect(failedBackup.status, JSON.stringify(failedBackup)).toBe("failed");
      expect(failedBackup.error).toMatch(
        /^the test-restore failed: the test-restore did not run: backup\.verify: the engine's disk is full/,
      );
      expect(failedBackup.error).not.toContain(own.dataRoot);
      // neither left a container, volume or network behind
      expect(await own.docker(["ps", "-aq"])).toBe(containers);
      expect(await own.docker(["volume", "ls", "-q"])).toBe(volumes);
      expect(await own.docker(["network", "ls", "-q"])).toBe(networks);
      await serves(pod);
    } finally {
      await own.free();
    }
    const again = `eng3-${stack?.prefix.slice(-4)}`;
    await create(alice.api, again);
    await waitForPodStatus(alice.api, again, "running", 120_000);
    await write(again, "index.html", PAGE);
    await serves(again);
    const backup = await backUp(pod);
    expect(backup.status, JSON.stringify(backup)).toBe("completed");
    await serves(pod);
  });
});
