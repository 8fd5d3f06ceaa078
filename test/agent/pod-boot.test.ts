import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { type Agent, podSpec, startAgent, until } from "./helpers";

/**
 * A pod's start (images/base/rootfs/opt/podhost/bin/pod-init): only the web server's own chain runs
 * before the page answers. Cron and the `.ssh` mode fixes come a second later, from pod-init (the
 * cron service dir carries a `down` file until then), and they still come at every start.
 */

let agent: Agent;
const site = podSpec("bootsite");
const sh = async (script: string) =>
  (
    await execInContainer(agent.docker, podNames(agent.config.namePrefix, site.name).container, [
      "/bin/sh",
      "-c",
      script,
    ])
  ).stdout.trim();

beforeAll(async () => {
  agent = await startAgent();
  await agent.handlers["pod.create"](site, agent.ctx);
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
}, 60_000);

describe("a pod's start", () => {
  it("starts cron a second after the page's server, at every start, and fixes the .ssh modes then", async () => {
    // cron is normally down (the `down` file): pod-init's `sv up` starts it, not runsvdir
    expect(await sh("test -e /run/pod/service/cron/down && echo down-file")).toBe("down-file");
    await until(async () => {
      const status = await sh("sv status cron");
      if (!/^run: .*normally down/.test(status)) throw new Error(status);
    }, 10_000);

    await sh("chmod 755 ~/.ssh && chmod 644 ~/.ssh/authorized_keys");
    await agent.handlers["pod.stop"]({ name: site.name }, agent.ctx);
    await agent.handlers["pod.start"]({ name: site.name }, agent.ctx);
    await until(async () => {
      const modes = await sh("stat -c %a ~/.ssh ~/.ssh/authorized_keys; sv status cron");
      if (!/^700\n600\nrun: /.test(modes)) throw new Error(modes);
    }, 10_000);
  }, 60_000);
});
