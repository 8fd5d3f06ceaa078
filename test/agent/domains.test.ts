import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Dispatcher } from "../../agent/connection/dispatch";
import type { Logger } from "../../agent/logger";
import { type Agent, httpGet, podSpec, startAgent, until } from "./helpers";

/**
 * Custom domains on the host (docs/domains.md): `pod.domains.set` against a real pod on the real
 * engine and the agent's own nginx. The vhost answers the custom Host header, keeps it across a
 * stop/start, drops it on `[]`; hostile names never reach the nginx config.
 */

let agent: Agent;
const web = podSpec("dom-web");
const CUSTOM = "www.customer-site.test";

const served = async (host: string) =>
  until(async () => {
    const r = await httpGet(agent.port, host);
    return r.status === 200 ? r : null;
  });

beforeAll(async () => {
  agent = await startAgent();
  expect(await agent.handlers["pod.create"](web, agent.ctx)).toMatchObject({ state: "running" });
  await served(web.domain);
});

afterAll(async () => {
  await agent?.cleanup();
});

describe("pod.domains.set", () => {
  it("the pod's vhost answers a verified domain beside its own; kept across stop and start", async () => {
    expect((await httpGet(agent.port, CUSTOM)).status).toBe(404);
    const set = await agent.handlers["pod.domains.set"](
      { name: web.name, domains: [CUSTOM, CUSTOM] },
      agent.ctx,
    );
    expect(set).toEqual({ domains: [CUSTOM] });
    const res = await served(CUSTOM);
    expect(res?.body).toContain("podhost");
    expect(res?.headers["x-podhost-ingress"]).toBeUndefined();
    const vhost = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    expect(vhost).toContain(`server_name ${web.domain} ${CUSTOM};`);

    await agent.handlers["pod.stop"]({ name: web.name }, agent.ctx);
    await agent.handlers["pod.start"]({ name: web.name }, agent.ctx);
    expect((await served(CUSTOM))?.status).toBe(200);
  });

  it("[] takes them off; the pod's own name still answers", async () => {
    await agent.handlers["pod.domains.set"]({ name: web.name, domains: [] }, agent.ctx);
    expect((await httpGet(agent.port, CUSTOM)).status).toBe(404);
    expect((await served(web.domain))?.status).toBe(200);
  });

  it("a stopped pod remembers them for its next start", async () => {
    await agent.handlers["pod.stop"]({ name: web.name }, agent.ctx);
    await agent.handlers["pod.domains.set"]({ name: web.name, domains: [CUSTOM] }, agent.ctx);
    await agent.handlers["pod.start"]({ name: web.name }, agent.ctx);
    expect((await served(CUSTOM))?.status).toBe(200);
  });

  it("hostile names are refused by the protocol and by the ingress; the config is untouched", async () => {
    const quiet: Logger = { info() {}, warn() {}, error() {}, child: () => quiet };
    const dispatcher = new Dispatcher(agent.handlers, quiet);
    const before = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    const hostile = [
      "evil.test; return 200",
      "evil.test\nserver_name x.test",
      "evil.test{",
      "evil .test",
      "*.evil.test",
      "10.0.0.1",
      "single",
      "UPPER.test",
    ];
    for (const [i, domain] of hostile.entries()) {
      const answer = await dispatcher.handle({
        type: "control:call",
        id: `c${i}`,
        idempotencyKey: `k${i}`,
        op: "pod.domains.set",
        params: { name: web.name, domains: [domain] },
        timeoutMs: 10_000,
      });
      expect(answer.ok, JSON.stringify(domain)).toBe(false);
      // past the protocol's schema (a handler called directly), the ingress refuses it too
      await expect(
        agent.handlers["pod.domains.set"]({ name: web.name, domains: [domain] }, agent.ctx),
      ).rejects.toMatchObject({ code: "bad_request" });
    }
    expect(await readFile(agent.ingress.vhostPath(web.name), "utf8")).toBe(before);

    // a state file edited by hand: its hostile entries are dropped at the next render
    await writeFile(
      join(agent.stateDir, "domains", `${web.name}.json`),
      JSON.stringify([CUSTOM, "x.test;}"]),
    );
    await agent.handlers["pod.restart"]({ name: web.name }, agent.ctx);
    const after = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    expect(after).toContain(`server_name ${web.domain} ${CUSTOM};`);
    expect(after).not.toContain("x.test;}");
  });

  it("the pod's deletion forgets them", async () => {
    await agent.handlers["pod.delete"]({ name: web.name }, agent.ctx);
    expect(await agent.ingress.customDomains(web.name)).toEqual([]);
    expect((await httpGet(agent.port, CUSTOM)).status).toBe(404);
  });
});
