import { execFile } from "node:child_process";
import { createServer, type Server } from "node:net";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerExec, dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForHostsPlaceable, waitForPodStatus } from "./support/pods";
import { freePort, type Stack, startStack, type TestHost, waitFor } from "./support/stack";

const run = promisify(execFile);
type User = Awaited<ReturnType<typeof signUp>>;

/**
 * Two hosts on one machine, each a real agent with its own name prefix, SSH port block, ingress
 * port and state dir, as two machines of one region would be. Worker + agents + Docker + nginx.
 */
describe("several hosts", () => {
  let stack: Stack;
  let alice: User;
  let one: TestHost;
  let two: TestHost;
  const tag = () => stack.prefix.slice(-4);
  const drain = (host: TestHost, undo = false) =>
    run("npx", [
      "tsx",
      "scripts/host-drain.ts",
      host.name,
      "--persist-to",
      stack.worker.persistDir,
      ...(undo ? ["--undo"] : []),
    ]);
  /** where a pod's container is: the host whose prefix names it */
  const hostOf = async (pod: string) => {
    for (const host of stack.hosts)
      if (await dockerInspect("container", `${host.prefix}-${pod}`)) return host;
    return undefined;
  };
  const createRunning = async (name: string, body: Record<string, unknown> = {}) => {
    const res = await alice.api.post("/api/pods", { name, preset: "static", ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitForPodStatus(alice.api, name, "running");
    return res.body as { server_name: string };
  };

  beforeAll(async () => {
    stack = await startStack("hosts");
    one = stack.hosts[0] as TestHost;
    two = await stack.addHost();
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    await waitForHostsPlaceable(stack.api, [one, two]);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it("spreads pods over both hosts by free capacity, and honours server_id", {
    timeout: 120_000,
  }, async () => {
    const a = await createRunning(`spread1-${tag()}`);
    const b = await createRunning(`spread2-${tag()}`);
    expect(new Set([a.server_name, b.server_name])).toEqual(new Set([one.name, two.name]));
    expect((await hostOf(`spread1-${tag()}`))?.name).toBe(a.server_name);
    expect((await hostOf(`spread2-${tag()}`))?.name).toBe(b.server_name);

    const pinned = await createRunning(`pinned-${tag()}`, { server_id: two.hostId });
    expect(pinned.server_name).toBe(two.name);
    expect((await hostOf(`pinned-${tag()}`))?.name).toBe(two.name);
    const page = await httpGet(stack.edgePort, `pinned-${tag()}.pods.localhost`);
    expect(page.status).toBe(200);
  });

  it("npm run host:drain stops new placements on a host, --undo lifts it", { timeout: 120_000 }, async () => {
    await drain(one);
    const refused = await alice.api.post("/api/pods", {
      name: `drained-${tag()}`,
      preset: "static",
      server_id: one.hostId,
    });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toBe(`server ${one.name} is drained: it takes no new pods`);
    for (let i = 0; i < 2; i++) expect((await createRunning(`d${i}-${tag()}`)).server_name).toBe(two.name);

    await drain(one, true);
    expect((await createRunning(`undrained-${tag()}`, { server_id: one.hostId })).server_name).toBe(one.name);
  });

  it("clones across hosts when the source's host takes no new pods: the files arrive intact", {
    timeout: 120_000,
  }, async () => {
    const source = `src-${tag()}`;
    await createRunning(source, { server_id: one.hostId });
    await dockerExec(`${one.prefix}-${source}`, [
      "sh",
      "-c",
      "echo across-hosts > app/marker.txt && mkdir -p app/deep/dir && head -c 300000 /dev/urandom > app/deep/dir/blob.bin && sha256sum app/deep/dir/blob.bin > app/sum.txt",
    ]);
    await drain(one);
    try {
      const copy = `copy-${tag()}`;
      const res = await alice.api.post(`/api/pods/${source}/clone`, { new_name: copy });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.server_name).toBe(two.name);
      await waitForPodStatus(alice.api, copy, "running");
      expect((await hostOf(copy))?.name).toBe(two.name);
      const marker = await httpGet(stack.edgePort, `${copy}.pods.localhost`, "/marker.txt");
      expect(marker.body.trim()).toBe("across-hosts");
      const check = await dockerExec(`${two.prefix}-${copy}`, ["sh", "-c", "sha256sum -c app/sum.txt"]);
      expect(check).toContain("OK");
      expect(await dockerExec(`${two.prefix}-${copy}`, ["stat", "-c", "%U", "app/marker.txt"])).toContain(
        "pod_user",
      );
    } finally {
      await drain(one, true);
    }
  });

  it("a stopped agent: placement skips its host and its pods' operations answer 503 naming it", {
    timeout: 120_000,
  }, async () => {
    const onTwo = `ontwo-${tag()}`;
    await createRunning(onTwo, { server_id: two.hostId });
    await two.agent.stop();
    try {
      const down = await alice.api.get(`/api/pods/${onTwo}`);
      expect(down.status).toBe(503);
      expect(down.body.error).toContain(`server ${two.name} is unavailable`);
      const stop = await alice.api.post(`/api/pods/${onTwo}/stop`);
      expect(stop.status).toBe(503);
      expect(stop.body.error).toContain(two.name);
      for (let i = 0; i < 2; i++)
        expect((await createRunning(`skip${i}-${tag()}`)).server_name).toBe(one.name);
    } finally {
      await two.startAgent();
    }
    await waitForPodStatus(alice.api, onTwo, "running");
  });

  it("an agent whose ingress cannot start takes no pods until the port is free", {
    timeout: 120_000,
  }, async () => {
    // A new user's mistake: another server already holds the port the ingress wants.
    const port = await freePort();
    const squatter: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
    const three = await stack.addHost({ ingressPort: port, env: { PODHOST_INGRESS_CHECK_S: "1" } });
    try {
      const refused = await waitFor("the host to report its problem", async () => {
        const res = await alice.api.post("/api/pods", {
          name: `sick-${tag()}`,
          preset: "static",
          server_id: three.hostId,
        });
        // until the ingress's failure: a starting agent's host first says "the agent is starting"
        return res.status === 503 && /cannot take pods: ingress failed/.test(res.body.error)
          ? res
          : undefined;
      });
      expect(refused.body.error).toMatch(
        new RegExp(`^server ${three.name} cannot take pods: ingress failed to start`),
      );
      expect(three.agent.output.join("")).toContain("ingress failed to start");
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    const name = `healed-${tag()}`;
    const placed = await waitFor("the host to take pods again", async () => {
      const res = await alice.api.post("/api/pods", { name, preset: "static", server_id: three.hostId });
      return res.status === 202 ? res : undefined;
    });
    expect(placed.body.server_name).toBe(three.name);
    await waitForPodStatus(alice.api, name, "running");
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).toBe(200);
  });
});
