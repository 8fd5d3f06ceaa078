import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  backupSettled,
  completedBackup,
  crashAgent,
  dockerObjects,
  fingerprint,
  mentioning,
  podWithFiles,
  postMultipart,
  printOnFailure,
  r2Keys,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A backup import under faults (docs/reliability.md): the archive uploaded through the Worker into
 * R2, then checked by the pod's host (`backup.verify`, a test-restore box) before it counts. The
 * agent away when the import is asked (the upload needs no host; the check waits for it), SIGKILLed
 * once the test-restore box starts, and after the check at its `command done` line; the Worker
 * restarted once the box starts. Each import ends `completed` and verified, listed once, with one
 * archive more in R2 and nothing staged; no box left; the pod's files untouched.
 */
describe("chaos: backup import", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;
  let podId: string;
  let archive: Uint8Array;
  let files: string;
  /** the time an import may take to end once the fault is over: the agent's return, a re-sent check */
  const ENDS_WITHIN_MS = 240_000;

  beforeAll(async () => {
    stack = await startStack("chaosbi");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-bi-${stack.prefix.slice(-4)}`;
    // incompressible, so checking the archive takes a moment: long enough to cut it mid-way
    ({ id: podId, files } = await podWithFiles(
      alice.api,
      pod,
      "static",
      "cd ~/app && head -c 20000000 /dev/urandom > big.bin && echo v1 > a.md",
    ));
    const backupId = await completedBackup(alice.api, pod);
    const res = await fetch(`${stack.api}/api/pods/${pod}/backups/${backupId}/download`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(res.status).toBe(200);
    archive = new Uint8Array(await res.arrayBuffer());
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/backup|command/)));

  const importArchive = async () => {
    const res = await postMultipart(`${stack.api}/api/pods/${pod}/backups/import`, alice.token, [
      { name: "file", value: archive, filename: "backup.tar.gz", type: "application/gzip" },
      { name: "note", value: "chaos" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.id as string;
  };

  const backupIds = async () => {
    const res = await alice.api.get(`/api/pods/${pod}/backups`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const list = (Array.isArray(res.body) ? res.body : res.body.backups) as { id: string }[];
    return list.map((b) => b.id);
  };

  /**
   * Imports the archive with `fault` applied at its own point, then checks: it ends completed and
   * verified within ENDS_WITHIN_MS, once, one archive more in R2 and nothing staged, no Docker object
   * more, the pod's files untouched. The import is deleted afterwards (the plan keeps 5).
   */
  const through = async (
    fault: (id: string, since: number) => Promise<void>,
    before?: () => Promise<void>,
  ) => {
    const objects = await dockerObjects(stack.prefix);
    const archives = await r2Keys(stack, `backups/${podId}/`);
    const staged = await r2Keys(stack);
    const listed = await backupIds();
    const since = Date.now();
    await before?.();
    const id = await importArchive();
    await fault(id, since);
    const faulted = Date.now();
    const end = await backupSettled(alice.api, pod, id, ENDS_WITHIN_MS);
    expect(end, JSON.stringify(end)).toMatchObject({ status: "completed", trigger: "import" });
    expect(end.verified_at, JSON.stringify(end)).toBeTruthy();
    console.info(`the import ended ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
    expect(await backupIds()).toEqual(expect.arrayContaining([...listed, id]));
    expect((await backupIds()).length).toBe(listed.length + 1);
    expect((await r2Keys(stack, `backups/${podId}/`)).length).toBe(archives.length + 1);
    expect(await r2Keys(stack)).toEqual(staged);
    await waitFor(
      "the test-restore box to go",
      async () =>
        JSON.stringify(await dockerObjects(stack.prefix)) === JSON.stringify(objects) ? true : undefined,
      60_000,
    );
    await waitForPodStatus(alice.api, pod, "running", 120_000);
    expect(await fingerprint(alice.api, pod)).toBe(files);
    const gone = await alice.api.delete(`/api/pods/${pod}/backups/${id}`);
    expect(gone.status, JSON.stringify(gone.body)).toBeLessThan(300);
    await waitFor(
      "the deleted import's archive to go",
      async () => ((await r2Keys(stack, `backups/${podId}/`)).length === archives.length ? true : undefined),
      60_000,
    );
  };

  /** until the host starts the test-restore box for the import */
  const checking = (id: string, since: number) =>
    agentReaches(
      stack.agent,
      "backup verify: starting the test-restore box",
      { backupId: id },
      180_000,
      since,
    );

  it("the agent away when the import is asked, started again: completed once", { timeout: 600_000 }, () =>
    through(
      () => agentGoneBeforeDispatch(stack, alice.api).back(),
      () => agentGoneBeforeDispatch(stack, alice.api).away(),
    ),
  );

  it(
    "the agent SIGKILLed once the test-restore box starts, started again: completed once",
    {
      timeout: 600_000,
    },
    () =>
      through(async (id, since) => {
        await checking(id, since);
        await crashAgent(stack);
      }),
  );

  it("the Worker restarted once the test-restore box starts: completed once", { timeout: 600_000 }, () =>
    through(async (id, since) => {
      await checking(id, since);
      await stack.restartWorker();
    }),
  );

  it(
    "the agent SIGKILLed after the check, at its answer, started again: completed once",
    {
      timeout: 600_000,
    },
    () =>
      through(async (_id, since) => {
        await agentReaches(stack.agent, "command done", { op: "backup.verify" }, 180_000, since);
        await crashAgent(stack);
      }),
  );
});
