import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceNames } from "../../agent/docker/naming";
import { PodLister } from "../../agent/metrics/running-pods";
import { SidecarReporter } from "../../agent/services/reports";
import { findPlan } from "../../shared/catalog";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * What the periodic watch reports of a pod's database sidecars (`agent:services`,
 * agent/services/reports.ts), on the real engine: a running sidecar, then the same one killed
 * (`docker kill`) and removed, as the next looks see them; a state counts once two looks agree and
 * is sent once.
 */

const build = findPlan("build");
if (!build) throw new Error("the catalog lacks the build plan");
const limits = { cpu: build.cpu, memoryMb: build.memoryMb, diskGb: build.diskGb, pids: 256 };

let agent: Agent;
const app = podSpec("svcreport", { limits });

beforeAll(async () => {
  agent = await startAgent();
  await agent.handlers["pod.create"](app, agent.ctx);
  await agent.handlers["service.install"](
    { name: app.name, type: "redis", password: "Pw_test-0123456789abcdefXYZ", limits },
    agent.ctx,
  );
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
});

describe("sidecar reports", () => {
  it("says running, then exited once the sidecar is killed, then an empty list once it is removed", async () => {
    const lister = new PodLister(agent.docker, agent.config);
    const reporter = new SidecarReporter();
    /** one tick of the watch: the reports it would send, committed as sent */
    const tick = async () => {
      const reports = reporter.check((await lister.list()).sidecars);
      reporter.commit(reports);
      return reports.filter((r) => r.name === app.name);
    };
    const container = serviceNames(agent.config.namePrefix, app.name, "redis").container;

    expect(await tick()).toEqual([]); // a first look: not yet two that agree
    expect(await tick()).toEqual([{ name: app.name, services: [{ type: "redis", state: "running" }] }]);
    expect(await tick()).toEqual([]); // unchanged: nothing to send

    await agent.docker.getContainer(container).kill();
    expect(await tick()).toEqual([]);
    expect(await tick()).toEqual([{ name: app.name, services: [{ type: "redis", state: "exited" }] }]);
    expect(await tick()).toEqual([]);

    await agent.docker.getContainer(container).remove({ force: true });
    await tick();
    expect(await tick()).toEqual([{ name: app.name, services: [] }]);

    // a reconnect: the running pod's list goes out again
    reporter.resync();
    expect(await tick()).toEqual([{ name: app.name, services: [] }]);
  }, 60_000);
});
