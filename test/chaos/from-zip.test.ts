import { createHash, randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { httpGet } from "../support/http";
import { buildZip } from "../support/zip";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  crashAgent,
  dockerObjects,
  eventCount,
  mentioning,
  podSh,
  postMultipart,
  printOnFailure,
  r2Keys,
  within,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A pod from a ZIP archive under faults (docs/reliability.md): asked while the host is away (refused,
 * the staged archive gone), the agent SIGKILLed as the 202 comes back, once the pod's container
 * exists (the archive being unpacked into it), and after the work at its `command done` line; the
 * Worker restarted once the container exists. Each ends `running` once (one `started` and one
 * `zip_uploaded` event; one container, volume and network more), `~/app` holds the archive's files
 * byte for byte, and no staged archive is left in R2.
 */
describe("chaos: from-zip", () => {
  let stack: Stack;
  let alice: User;
  let zip: Uint8Array;
  let n = 0;
  /** the time a from-zip may take to end once the fault is over: the agent's return, a re-sent command */
  const ENDS_WITHIN_MS = 240_000;
  const big = randomBytes(24 * 1024 * 1024);
  const files: Record<string, Uint8Array | string> = {
    "index.html": "<!doctype html><title>zipped</title><h1>zipped under faults</h1>\n",
    "big.bin": big,
    "notes/a.md": "v1\n",
  };
  const sha = (d: Uint8Array | string) => createHash("sha256").update(d).digest("hex");
  const names = Object.keys(files).sort();
  const expected = names.map((f) => `${sha(files[f] as Uint8Array | string)}  ${f}`).join("\n");

  beforeAll(async () => {
    // stored (not deflated): random bytes do not compress, and the archive stays 24 MiB to unpack
    zip = await buildZip([
      { name: "index.html", data: files["index.html"] },
      { name: "big.bin", data: big, method: 0 },
      { name: "notes/" },
      { name: "notes/a.md", data: files["notes/a.md"] },
    ]);
    stack = await startStack("chaoszp");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/command|pod|zip/)));

  const nextName = () => `chaos-zp${++n}-${stack.prefix.slice(-4)}`;

  const fromZip = (name: string) =>
    postMultipart(`${stack.api}/api/pods/from-zip`, alice.token, [
      { name: "zip", value: zip, filename: "site.zip", type: "application/zip" },
      { name: "name", value: name },
      { name: "plan_slug", value: "build" },
    ]);

  /**
   * Starts a from-zip of a new pod, applies `fault`, and checks that it ends running once with the
   * archive's files, one container, volume and network more, served, and no staged archive left.
   */
  const through = async (fault: (name: string, since: number) => Promise<void>) => {
    const name = nextName();
    const objects = await dockerObjects(stack.prefix);
    const staged = await r2Keys(stack);
    const since = Date.now();
    const made = await fromZip(name);
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    await fault(name, since);
    const faulted = Date.now();
    const pod = await waitFor(
      `${name} to end`,
      async () => {
        const res = await within(alice.api.get(`/api/pods/${name}`));
        return res.status === 200 && res.body.status !== "creating" && res.body.status !== "pending"
          ? res.body
          : undefined;
      },
      ENDS_WITHIN_MS,
    );
    const said = (await alice.api.get(`/api/pods/${name}/events?limit=20`)).body.events;
    expect(pod, JSON.stringify({ pod, events: said })).toMatchObject({ status: "running" });
    console.info(`${name} ended ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
    expect(await eventCount(alice.api, name, "started")).toBe(1);
    expect(await eventCount(alice.api, name, "zip_uploaded")).toBe(1);
    expect(await podSh(alice.api, name, `cd ~/app && sha256sum ${names.join(" ")}`)).toBe(expected);
    const after = await dockerObjects(stack.prefix);
    const more = (k: "containers" | "volumes" | "networks") =>
      after[k].filter((x) => !objects[k].includes(x));
    expect(more("containers")).toEqual([`${stack.prefix}-${name}`]);
    expect(more("volumes")).toEqual([`${stack.prefix}-${name}-home`]);
    expect(more("networks")).toEqual([`${stack.prefix}-${name}`]);
    expect(after.containers.length).toBe(objects.containers.length + 1);
    // the workflow's last step discards the archive: the pod may be running a moment before
    await waitFor(
      "the staged archive to go",
      async () => (JSON.stringify(await r2Keys(stack)) === JSON.stringify(staged) ? true : undefined),
      60_000,
    );
    await waitFor(
      `${name} served`,
      async () =>
        (
          await httpGet(stack.edgePort, `${name}.pods.localhost`).catch(() => ({ status: 0, body: "" }))
        ).body.includes("zipped under faults")
          ? true
          : undefined,
      60_000,
    );
  };

  /** until the new pod's container exists: the host is mid-work, the archive going into it */
  const containerUp = (name: string) =>
    waitFor(
      "the pod's container",
      async () => ((await dockerInspect("container", `${stack.prefix}-${name}`)) ? true : undefined),
      120_000,
    );

  it("asked while its host is away: 503 naming it, no pod, nothing staged; once back, a from-zip killed as its 202 comes back ends running once", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const staged = await r2Keys(stack);
    const gone = agentGoneBeforeDispatch(stack, alice.api);
    await gone.away();
    const name = nextName();
    try {
      const refused = await fromZip(name);
      expect(refused.status, JSON.stringify(refused.body)).toBe(503);
      expect(refused.body.error).toBeTruthy();
      expect((await within(alice.api.get(`/api/pods/${name}`))).status).toBe(404);
      expect(await r2Keys(stack)).toEqual(staged);
    } finally {
      await gone.back(0);
    }
    await waitForHostOnline(alice.api);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    await through(() => crashAgent(stack));
  });

  it(
    "the agent SIGKILLed once the container exists (unpacking), started again: running once, the archive's files",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name) => {
        await containerUp(name);
        await crashAgent(stack);
      }),
  );

  it(
    "the Worker restarted once the container exists: running once, the archive's files",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name) => {
        await containerUp(name);
        await stack.restartWorker();
      }),
  );

  it(
    "the agent SIGKILLed after the work, at its answer, started again: running once",
    {
      timeout: 600_000,
    },
    () =>
      through(async (name, since) => {
        await agentReaches(stack.agent, "command done", { op: "pod.create", pod: name }, 180_000, since);
        await crashAgent(stack);
      }),
  );
});
