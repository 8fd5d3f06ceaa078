import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import {
  agentGoneBeforeDispatch,
  agentReaches,
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

const run = promisify(execFile);

type User = Awaited<ReturnType<typeof signUp>>;
type Listed = { slug: string; status: string; error_msg?: string; version: string; command: string };

/** the catalog's smallest agent that really runs (~13 MB), as test/e2e/coding-agents.test.ts installs */
const AGENT = "auggie";
const PACKAGE = "@augmentcode/auggie";
/** the install's steps in the pod (agent/coding-agents/pod-install.ts): the copy, which names its stage, and npm rebuild */
const INSTALL_STEP = /podhost-stage|npm-cli\.js rebuild/;

/**
 * A coding agent's install under faults (docs/reliability.md), from the real npm registry into one
 * Node.js pod shared by the file's tests: the agent SIGKILLed while the host's npm fetches and
 * unpacks the package (its scratch directory in the host cache has bytes), while the package is
 * copied into the pod and while `npm rebuild` runs there (each seen in the container's processes),
 * after the work at its `command done` line, and gone before dispatch, started again each time; and
 * the Worker restarted during the copy. The install ends `installed` once (one record, one
 * `agent_installed` event more), the command runs, the pod holds one copy of the package, no stage
 * of it and no step of the killed run still going, the host cache holds the package's tree and no
 * partial fetch (nor an npm of the killed agent), no Docker object is left, and the pod's own files
 * are unchanged.
 */
describe("chaos: coding-agent install", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;
  let files: string;
  /** the time an install may take to end once the agent is back: a re-sent command, the fetch again */
  const ENDS_WITHIN_MS = 240_000;

  beforeAll(async () => {
    stack = await startStack("chaoscag");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-cag-${stack.prefix.slice(-4)}`;
    ({ files } = await podWithFiles(
      alice.api,
      pod,
      "nodejs",
      "cd ~/app && head -c 2000000 /dev/urandom > data.bin && mkdir -p notes && echo v1 > notes/a.md",
    ));
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
  });

  // a failure shows what the host did: its lines about the install
  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/coding-agents|npm|command/)));

  /** the host cache's coding-agent trees (agent/coding-agents/host-cache.ts) on the pods' disk, else in the state dir */
  const hostCache = () => {
    const root =
      stack.agentEnv.PODHOST_POD_DISK_ROOT ??
      process.env.PODHOST_POD_DISK_ROOT ??
      "/var/lib/podhost/pod-disk";
    const dir = root
      ? path.join(root, `${stack.hosts[0]?.prefix}-host-cache`)
      : (stack.hosts[0]?.stateDir ?? "");
    return path.join(dir, "coding-agents");
  };
  const cached = async () => (await readdir(hostCache()).catch(() => [] as string[])).sort();

  /** the host's processes whose arguments name `dir` (an npm fetching into the host cache) */
  const processesIn = async (dir: string) =>
    (await run("ps", ["-eo", "pid,args", "--no-headers"])).stdout
      .split("\n")
      .filter((l) => l.includes(dir))
      .map((l) => l.trim().slice(0, 200));

  const listed = async (): Promise<Listed[]> => {
    const res = await within(alice.api.get(`/api/pods/${pod}/agents`));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.agents as Listed[]).filter((a) => a.slug === AGENT);
  };

  /**
   * Asks for the install (`ask`, default: through the API, expecting 202), applies `fault`, and checks
   * that it ends installed once, leaving one copy in the pod, the tree in the host cache and nothing else.
   */
  const installThrough = async (fault: (since: number) => Promise<void>, ask?: () => Promise<void>) => {
    // the previous test's install goes first (it may have failed before removing it)
    const removed = await alice.api.delete(`/api/pods/${pod}/agents/${AGENT}`);
    expect([200, 404], JSON.stringify(removed.body)).toContain(removed.status);
    const objects = await dockerObjects(stack.prefix);
    const installedBefore = await eventCount(alice.api, pod, "agent_installed");
    const since = Date.now();
    if (ask) await ask();
    else {
      const res = await alice.api.post(`/api/pods/${pod}/agents`, { agent: AGENT });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    }
    await fault(since);
    const faulted = Date.now();
    const done = await waitFor(
      "the install to end",
      async () => {
        const [a] = await listed();
        return a && a.status !== "installing" ? a : undefined;
      },
      ENDS_WITHIN_MS,
    );
    expect(done, JSON.stringify(done)).toMatchObject({ status: "installed", command: "auggie" });
    console.info(`${AGENT} ${done.status} ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
    // the checks below run in the pod through the agent: it is back
    await waitForHostOnline(alice.api);
    // once: one record, one `agent_installed` event more
    expect(await listed()).toHaveLength(1);
    expect(await eventCount(alice.api, pod, "agent_installed")).toBe(installedBefore + 1);
    // the command runs the version the record names
    expect(await podSh(alice.api, pod, "~/.npm-global/bin/auggie --version")).toContain(done.version);
    // one copy of the package in the pod, its command, and no stage or old copy beside it
    expect(
      await podSh(
        alice.api,
        pod,
        "cd ~/.npm-global && ls -A lib/node_modules lib/node_modules/@augmentcode bin | tr '\\n' ' '",
      ),
    ).toBe("bin: auggie  lib/node_modules: @augmentcode  lib/node_modules/@augmentcode: auggie");
    expect(await podSh(alice.api, pod, `find ~ -path '*/${PACKAGE}/package.json' -type f | wc -l`)).toBe("1");
    // the host cache holds the tree and no partial fetch, and no npm of the killed agent runs on in it
    expect(await cached()).toEqual([`${PACKAGE.replace("/", "+")}@${done.version}`]);
    expect(await processesIn(hostCache())).toEqual([]);
    // no step of the killed run's goes on in the pod (its copy or npm rebuild)
    expect((await podTop()).filter((l) => INSTALL_STEP.test(l))).toEqual([]);
    // no helper or other Docker object left, the pod's files unchanged
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    expect(await fingerprint(alice.api, pod)).toBe(files);
  };

  it(
    "the agent SIGKILLed while the host's npm fetches the package, started again: installed once, no partial fetch left",
    { timeout: 600_000 },
    () =>
      installThrough(async () => {
        // npm's scratch prefix in the host cache holds bytes: the download or its unpacking runs
        await waitFor(
          "npm to fetch into the host cache",
          async () => {
            for (const name of await cached()) {
              if (!name.startsWith(".fetch-")) continue;
              const inside = await readdir(path.join(hostCache(), name), { recursive: true }).catch(() => []);
              if (inside.length > 3) return true;
            }
            return undefined;
          },
          120_000,
        );
        await crashAgent(stack);
        console.info(`the killed agent's npm: ${JSON.stringify(await processesIn(hostCache()))}`);
      }),
  );

  /** the processes of the pod's container, one line each (`docker top`) */
  const podTop = async () =>
    (
      await run("docker", ["top", `${stack.prefix}-${pod}`, "-eo", "pid,args"]).catch(() => ({ stdout: "" }))
    ).stdout.split("\n");

  /**
   * Until a process of the install's in-pod `step` runs in the pod's container (`docker top`, asked
   * back to back: the copy of ~13 MB lasts about a second): the kill point.
   */
  const inPod = async (step: RegExp) => {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const line = (await podTop()).find((l) => step.test(l));
      if (line) return console.info(`killed at: ${line.replace(/\s+/g, " ").slice(0, 120)}`);
    }
    throw new Error(`timed out waiting for ${step} in the pod`);
  };

  it(
    "the agent SIGKILLed while the package is copied into the pod, started again: installed once, one copy, no stage left",
    { timeout: 600_000 },
    () =>
      installThrough(async () => {
        // the copy's script (agent/coding-agents/pod-install.ts PLACE) names its stage directory
        await inPod(/podhost-stage/);
        await crashAgent(stack);
      }),
  );

  it(
    "the agent SIGKILLed while npm rebuild runs in the pod, started again: installed once, one copy",
    { timeout: 600_000 },
    () =>
      installThrough(async () => {
        await inPod(/npm-cli\.js rebuild/);
        await crashAgent(stack);
      }),
  );

  it(
    "the Worker restarted while the package is copied into the pod: installed once, one copy",
    { timeout: 600_000 },
    () =>
      installThrough(async () => {
        await inPod(/podhost-stage/);
        await stack.restartWorker();
      }),
  );

  it(
    "the agent SIGKILLed after the work, at its command done line, started again: installed once",
    { timeout: 600_000 },
    () =>
      installThrough(async (since) => {
        await agentReaches(
          stack.agent,
          "command done",
          { op: "pod.coding-agents.install", pod },
          180_000,
          since,
        );
        await crashAgent(stack);
      }),
  );

  it("asked while the agent is away (before dispatch), started again: installed once", {
    timeout: 600_000,
  }, async () => {
    const gone = agentGoneBeforeDispatch(stack, alice.api);
    await installThrough(
      async () => {
        await gone.back();
        await waitForHostOnline(alice.api);
      },
      async () => {
        await gone.away();
        const res = await alice.api.post(`/api/pods/${pod}/agents`, { agent: AGENT });
        expect(res.status, JSON.stringify(res.body)).toBe(202);
      },
    );
  });
});
