import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline } from "../e2e/support/pods";
import { type Stack, startStack } from "../e2e/support/stack";
import {
  agentReaches,
  backupSettled,
  dockerObjects,
  fingerprint,
  mentioning,
  podSh,
  podWithFiles,
  printOnFailure,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A backup under faults (docs/reliability.md): the Worker restarted while the host streams the
 * archive into it or reads it back for the test-restore, and the agent SIGKILLed mid-archive. Each
 * ends `completed` and verified, once: one backup, the pod's files unchanged, no helper left behind.
 * The kill points are read off the agent's log (agent/backups/create.ts, verify.ts).
 */
describe("chaos: backup", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;
  let files: string;
  /** the time an operation may take to end once the fault is over: a rerun after a pause, a verify */
  const ENDS_WITHIN_MS = 180_000;

  beforeAll(async () => {
    // direct: false, so the Worker keeps its address across a restart
    stack = await startStack("chaosbk");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-bk-${stack.prefix.slice(-4)}`;
    // incompressible, so the archive takes seconds to stream: long enough to cut it mid-way
    ({ files } = await podWithFiles(
      alice.api,
      pod,
      "nodejs",
      "cd ~/app && head -c 100000000 /dev/urandom > big.bin && mkdir -p notes && echo v1 > notes/a.md",
      60_000,
    ));
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
  });

  // a failure shows what the host did: its log lines about backups
  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/backup|command/)));

  const backUp = async () => {
    const res = await alice.api.post(`/api/pods/${pod}/backups`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.id as string;
  };

  const endsCompleted = async (id: string) => {
    const done = await backupSettled(alice.api, pod, id, ENDS_WITHIN_MS);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect(done.verified_at).toBeTruthy();
    expect(done.size).toBeGreaterThan(100_000_000);
    expect(await fingerprint(alice.api, pod)).toBe(files);
    return done;
  };

  it("the Worker restarted while the archive streams into it: the step is run again, completed", {
    timeout: 400_000,
  }, async () => {
    const before = await dockerObjects(stack.prefix);
    const id = await backUp();
    await agentReaches(stack.agent, "backup: archiving and sending", { backupId: id });
    await stack.restartWorker();
    await endsCompleted(id);
    // the host's rerun sent the archive again, under the same object: one backup, nothing left over
    const list = await alice.api.get(`/api/pods/${pod}/backups`);
    expect(list.body.backups.filter((b: { id: string }) => b.id === id)).toHaveLength(1);
    expect(await dockerObjects(stack.prefix)).toEqual(before);
  });

  it("the Worker restarted while the test-restore reads the archive back: completed", {
    timeout: 400_000,
  }, async () => {
    const before = await dockerObjects(stack.prefix);
    const id = await backUp();
    await agentReaches(stack.agent, "backup verify: starting the test-restore box", { backupId: id });
    await stack.restartWorker();
    await endsCompleted(id);
    expect(await dockerObjects(stack.prefix)).toEqual(before);
  });

  it("the agent SIGKILLed mid-archive, then started again: completed, no helper or spool left", {
    timeout: 400_000,
  }, async () => {
    const before = await dockerObjects(stack.prefix);
    const id = await backUp();
    await agentReaches(stack.agent, "backup: archiving and sending", { backupId: id });
    await stack.agent.kill();
    await stack.startAgent();
    await endsCompleted(id);
    expect(await dockerObjects(stack.prefix)).toEqual(before);
    // the spool of the killed run went with the rerun's own (create.ts PREPARE and CLEAN)
    expect(await podSh(alice.api, pod, "ls -A ~/.pod/backup 2>/dev/null | wc -l")).toBe("0");
  });
});
