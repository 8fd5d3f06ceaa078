import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { RUNIT_FNS, restartServices } from "../../agent/docker/runit";
import { type Agent, httpGet, podSpec, startAgent } from "./helpers";

/**
 * Restarting a pod's services (reload, deploys, the Node.js switch): the answer comes once the old
 * process is gone and a new one runs, even right after the pod booted, where `sv restart` counted
 * the restart as done at once (its wait compares whole seconds) and a from-zip pod was called
 * running while its old nginx was about to go away: visitors met a 502.
 */

let agent: Agent;
const node = podSpec("svnode", { preset: "nodejs", port: 3000 });
const site = podSpec("svsite");
const container = (name: string) => podNames(agent.config.namePrefix, name).container;
const sh = async (name: string, script: string) =>
  (await execInContainer(agent.docker, container(name), ["/bin/sh", "-c", script])).stdout.trim();
const pidOf = (name: string, service: string) => sh(name, `cat /run/pod/service/${service}/supervise/pid`);

beforeAll(async () => {
  agent = await startAgent();
  await Promise.all([
    agent.handlers["pod.create"](node, agent.ctx),
    agent.handlers["pod.create"](site, agent.ctx),
  ]);
});

afterAll(async () => {
  await agent?.cleanup();
});

describe("restarting a pod's services", () => {
  it("answers only once a new process runs and the old one is gone, also within the second of a boot", async () => {
    for (let round = 0; round < 3; round++) {
      // Stop and start: the app starts again now, so the restart below falls in its first second.
      await agent.handlers["pod.stop"]({ name: node.name }, agent.ctx);
      await agent.handlers["pod.start"]({ name: node.name }, agent.ctx);
      const before = await pidOf(node.name, "app");
      expect(before).toMatch(/^\d+$/);
      expect(await restartServices(agent.docker, container(node.name), ["app"])).toEqual([]);
      const after = await pidOf(node.name, "app");
      expect(after).toMatch(/^\d+$/);
      expect(after).not.toBe(before);
      expect(await sh(node.name, `kill -0 ${before} 2>/dev/null && echo alive || echo gone`)).toBe("gone");
    }
  });

  it("reloads nginx in place: the same server, and no request fails through five reloads", async () => {
    const nginx = await pidOf(site.name, "web");
    let stop = false;
    const statuses: number[] = [];
    const visitor = (async () => {
      while (!stop)
        statuses.push((await httpGet(agent.port, site.domain).catch(() => ({ status: 0 }))).status);
    })();
    for (let i = 0; i < 5; i++)
      expect(await restartServices(agent.docker, container(site.name), ["web"])).toEqual([]);
    stop = true;
    await visitor;
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await pidOf(site.name, "web")).toBe(nginx);
  });

  it("stops and starts a service, answering when it is down and up again (sv itself looks every 420 ms)", async () => {
    // runsv waits a second before starting again a service that ran for less than one (the test
    // above just restarted it); a restore stops an app that has been running.
    await new Promise((r) => setTimeout(r, 1100));
    const t0 = performance.now();
    const out = await sh(
      node.name,
      `${RUNIT_FNS}\nsv_stop app; sv status app | cut -d: -f1; sv_start app; sv status app | cut -d: -f1`,
    );
    const took = performance.now() - t0;
    expect(out.split("\n")).toEqual(["stopped app 0", "down", "started app 0", "run"]);
    expect(took).toBeLessThan(800);
  });

  it("names a service that did not come up", async () => {
    expect(await restartServices(agent.docker, container(site.name), ["no-such-service"])).toEqual([
      "no-such-service",
    ]);
  });
});
