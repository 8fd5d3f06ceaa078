import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline, waitForHostsPlaceable } from "../e2e/support/pods";
import { type Stack, sleep, startStack, type TestHost, waitFor } from "../e2e/support/stack";
import {
  agentLines,
  agentReaches,
  dockerObjects,
  endsRunningOnce,
  fingerprint,
  mentioning,
  podWithFiles,
  printOnFailure,
  r2Keys,
  servedThroughEdge,
  within,
} from "./support";

const run = promisify(execFile);
type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A clone across hosts under faults (docs/reliability.md). The source runs on host one, which is
 * drained, so a clone goes to host two: host one streams the source's home into R2
 * (`pod.clone.export`), and host two fills the new pod's volume from it (`pod.create` with a staged
 * home). Faults: the target's agent SIGKILLed as the 201 comes back (it is away when its command is
 * sent, and started once the export is done), mid-copy (its clone helper exists) and after the work
 * (its `command done` line); the Worker restarted while the export streams into R2, and while the
 * target reads it back. Each ends `running` once on host two (one `started` event; one container,
 * volume and network more there), with its source's files; host one's Docker objects and the
 * source's files are untouched, and no staged copy of the home is left in R2.
 */
describe("chaos: clone across hosts", () => {
  let stack: Stack;
  let alice: User;
  let one: TestHost;
  let two: TestHost;
  let source: string;
  let sourceFiles: string;
  let n = 0;
  /** the time a clone may take to end once the fault is over: two hosts' commands, a re-sent one */
  const ENDS_WITHIN_MS = 240_000;

  const drain = (host: TestHost, undo = false) =>
    run("npx", [
      "tsx",
      "scripts/host-drain.ts",
      host.name,
      "--persist-to",
      stack.worker.persistDir,
      ...(undo ? ["--undo"] : []),
    ]);

  beforeAll(async () => {
    stack = await startStack("chaoscx");
    one = stack.hosts[0] as TestHost;
    two = await stack.addHost();
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    await waitForHostsPlaceable(stack.api, [one, two]);
    source = `chaos-xsrc-${stack.prefix.slice(-4)}`;
    // incompressible and over one 8 MiB part, so the copy through R2 takes a moment on each side
    ({ files: sourceFiles } = await podWithFiles(
      alice.api,
      source,
      "nodejs",
      "cd ~/app && head -c 20000000 /dev/urandom > big.bin && mkdir -p notes && echo v1 > notes/a.md",
      180_000,
      { server_id: one.hostId },
    ));
    // the source's host takes no new pods: a clone goes to host two, its files through R2
    await drain(one);
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => {
    const about = mentioning(/command|pod|clone|blob/);
    printOnFailure(ctx, stack, about);
    if (ctx.task.result?.state === "fail" && two)
      console.error(
        `host two:\n${agentLines(two.agent)
          .filter(about)
          .map((l) => JSON.stringify(l))
          .join("\n")}`,
      );
  });

  const nextName = () => `chaos-xcl${++n}-${stack.prefix.slice(-4)}`;

  /** the staged objects (open multipart uploads aside: those are listed by `openUploads`) */
  const stagedObjects = async () => (await r2Keys(stack)).filter((k) => !k.startsWith("open upload "));
  const openUploads = async () => (await r2Keys(stack)).filter((k) => k.startsWith("open upload "));

  /**
   * Asks for a clone of the source (201, placed on host two), applies `fault`, and checks it ends
   * running once on host two with the source's files, host one and the source untouched, nothing
   * staged left, and the clone served.
   */
  const through = async (fault: (name: string, since: number) => Promise<void>) => {
    const name = nextName();
    const onOne = await dockerObjects(one.prefix);
    const onTwo = await dockerObjects(two.prefix);
    const staged = await stagedObjects();
    const since = Date.now();
    const res = await alice.api.post(`/api/pods/${source}/clone`, { new_name: name });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.server_name).toBe(two.name);
    await fault(name, since);
    await endsRunningOnce(alice.api, two.prefix, name, onTwo, ENDS_WITHIN_MS);
    expect(await dockerObjects(one.prefix)).toEqual(onOne);
    expect(await fingerprint(alice.api, name)).toBe(sourceFiles);
    expect(await fingerprint(alice.api, source)).toBe(sourceFiles);
    expect((await within(alice.api.get(`/api/pods/${source}`))).body.status).toBe("running");
    // the workflow's last step discards both copies of the home
    await waitFor(
      "the staged copies to go",
      async () => (JSON.stringify(await stagedObjects()) === JSON.stringify(staged) ? true : undefined),
      60_000,
    );
    // what each host ran, for the run's record: a rerun after a cut shows here
    const ran = (host: TestHost, op: string) =>
      agentLines(host.agent)
        .filter((l) => l.op === op && Date.parse(String(l.t)) >= since && /^command /.test(String(l.msg)))
        .map((l) => `${l.msg}${l.error ? ` (${l.error})` : ""}`);
    console.info(
      `${name}: host one's exports: ${JSON.stringify(ran(one, "pod.clone.export"))}; host two's creates: ${JSON.stringify(ran(two, "pod.create"))}`,
    );
    const open = await openUploads();
    if (open.length > 0) console.info(`multipart uploads left open by the fault: ${open.join(", ")}`);
    await servedThroughEdge(stack, name);
  };

  /** host two's agent SIGKILLed (a crash) and started again on the same state */
  const crashTwo = async () => {
    await two.agent.kill();
    await two.startAgent();
  };

  /** until the clone's helper on host two (it streams the staged home into the new volume) exists */
  const copying = (name: string) =>
    waitFor(
      "the clone's helper on host two",
      async () => ((await dockerInspect("container", `${two.prefix}-${name}_clone`)) ? true : undefined),
      180_000,
    );

  /** until host one's export is streaming into R2 (a multipart upload of its staging key is open) */
  const exporting = () =>
    waitFor(
      "the export's upload",
      async () =>
        (await r2Keys(stack, `staging/${one.hostId}/`)).some((k) => k.startsWith("open upload "))
          ? true
          : undefined,
      180_000,
    );

  it(
    "the target's agent SIGKILLed as the 201 comes back, started once the export is done: running once",
    {
      timeout: 600_000,
    },
    () =>
      through(async (_name, since) => {
        await two.agent.kill();
        // the create is sent to host two while it is away: its step waits for the host's return
        await agentReaches(one.agent, "command done", { op: "pod.clone.export" }, 180_000, since);
        await sleep(3_000);
        await two.startAgent();
      }),
  );

  it(
    "the target's agent SIGKILLed mid-copy, started again: running once, the files whole",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name) => {
        await copying(name);
        await crashTwo();
      }),
  );

  it(
    "the target's agent SIGKILLed after the work, at its answer, started again: running once",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name, since) => {
        await agentReaches(two.agent, "command done", { op: "pod.create", pod: name }, 240_000, since);
        await crashTwo();
      }),
  );

  it(
    "the Worker restarted while the export streams into R2: running once, the files whole",
    {
      timeout: 600_000,
    },
    () =>
      through(async () => {
        await exporting();
        await stack.restartWorker();
      }),
  );

  it(
    "the Worker restarted while the target reads the copy back: running once, the files whole",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name) => {
        await copying(name);
        await stack.restartWorker();
      }),
  );
});
