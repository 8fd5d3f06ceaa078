import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  completedBackup,
  crashAgent,
  dockerObjects,
  eventCount,
  fingerprint,
  mentioning,
  podSh,
  podWithFiles,
  printOnFailure,
  within,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A restore under faults (docs/reliability.md): the agent SIGKILLed before the command reaches it,
 * while it reads the archive into staging, while ~/app is swapped and once the restore is done but
 * before its answer; the Worker restarted while the host reads the archive. Each restore ends
 * `restore_completed` once, the pod running with exactly the backup's files, nothing left behind.
 * The kill points are read off the agent's log (agent/backups/restore.ts).
 */
describe("chaos: restore", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;
  let backedUp: string;
  let backupId: string;
  /** the time a restore may take to end once the fault is over: the agent's return, a re-sent command */
  const ENDS_WITHIN_MS = 240_000;

  beforeAll(async () => {
    stack = await startStack("chaosrs");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-rs-${stack.prefix.slice(-4)}`;
    // incompressible, so reading the archive back takes a moment: long enough to cut it mid-way
    ({ files: backedUp } = await podWithFiles(
      alice.api,
      pod,
      "nodejs",
      "cd ~/app && head -c 40000000 /dev/urandom > big.bin && mkdir -p notes && echo v1 > notes/a.md",
    ));
    backupId = await completedBackup(alice.api, pod);
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/restore|command/)));

  /**
   * Changes the files, starts a restore and applies `fault` (which finds its own point), then checks:
   * it ends completed within ENDS_WITHIN_MS, once, with the backup's files, and no Docker object more.
   */
  const restoreThrough = async (fault: (since: number) => Promise<void>, before?: () => Promise<void>) => {
    await podSh(alice.api, pod, "cd ~/app && rm -f big.bin && echo v2 > notes/a.md && echo new > added.txt");
    const objects = await dockerObjects(stack.prefix);
    const completed = await eventCount(alice.api, pod, "restore_completed");
    const started = await eventCount(alice.api, pod, "restore_started");
    const since = Date.now();
    await before?.();
    const res = await alice.api.post(`/api/pods/${pod}/backups/${backupId}/restore`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await fault(since);
    const faulted = Date.now();
    const ended = await waitFor(
      "the restore to end",
      async () => {
        const list = (await within(alice.api.get(`/api/pods/${pod}/events?limit=20`))).body.events as
          | { type: string; message?: string }[]
          | undefined;
        return (
          list?.find((e) => e.type === "restore_failed") ??
          ((await within(eventCount(alice.api, pod, "restore_completed"))) > completed
            ? { type: "restore_completed" }
            : undefined)
        );
      },
      ENDS_WITHIN_MS,
    );
    expect(ended, JSON.stringify(ended)).toMatchObject({ type: "restore_completed" });
    console.info(`the restore ended ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
    expect(await eventCount(alice.api, pod, "restore_completed")).toBe(completed + 1);
    expect(await eventCount(alice.api, pod, "restore_started")).toBe(started + 1);
    await waitForPodStatus(alice.api, pod, "running", 120_000);
    expect(await fingerprint(alice.api, pod)).toBe(backedUp);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    // no staging left in the pod (restore.ts removes it at the end of every run)
    expect(await podSh(alice.api, pod, "ls -A ~/.pod/restore 2>/dev/null | wc -l")).toBe("0");
  };

  const at = (msg: string) => (since: number) => agentReaches(stack.agent, msg, { backupId }, 120_000, since);

  it("the Worker restarted while the host reads the archive: restored once", { timeout: 600_000 }, () =>
    restoreThrough(async (since) => {
      await at("backup restore: reading the archive into staging")(since);
      await stack.restartWorker();
    }),
  );

  it(
    "the agent SIGKILLed before the command reaches it, started again: restored once",
    {
      timeout: 600_000,
    },
    () =>
      restoreThrough(
        () => agentGoneBeforeDispatch(stack, alice.api).back(),
        () => agentGoneBeforeDispatch(stack, alice.api).away(),
      ),
  );

  it(
    "the agent SIGKILLed while it reads the archive, started again: restored once",
    {
      timeout: 600_000,
    },
    () =>
      restoreThrough(async (since) => {
        await at("backup restore: reading the archive into staging")(since);
        await crashAgent(stack);
      }),
  );

  it("the agent SIGKILLed while ~/app is swapped, started again: restored once", { timeout: 600_000 }, () =>
    restoreThrough(async (since) => {
      await at("backup restore: stopping services and swapping ~/app")(since);
      await crashAgent(stack);
    }),
  );

  it(
    "the agent SIGKILLed once the restore is done, before its answer, started again: restored once",
    {
      timeout: 600_000,
    },
    () =>
      restoreThrough(async (since) => {
        await at("backup restore: done")(since);
        await crashAgent(stack);
      }),
  );
});
