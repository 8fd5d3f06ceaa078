import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DnsDouble, startDnsDouble } from "../support/dns";
import { httpGet } from "../support/http";
import { type ApiClient, signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * Custom domains end to end (docs/domains.md): the Worker in workerd verifying through the
 * DNS-over-HTTPS double (test/support/dns.ts, DNS_RESOLVER_URL), the agent as its own process
 * rendering the pod's vhost, and the host's nginx answering the custom Host header; kept across a
 * stop and start, gone after the removal.
 */

const POD = "dom-site";
const DOMAIN = "www.e2e-customer.test";

describe("custom domains end to end", () => {
  let dns: DnsDouble;
  let stack: Stack;
  let api: ApiClient;

  const page = (host: string) => httpGet(stack.edgePort, host);
  const servedWithin = async (host: string, status: number, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    let last = await page(host);
    while (last.status !== status && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      last = await page(host);
    }
    return last;
  };

  beforeAll(async () => {
    dns = await startDnsDouble();
    stack = await startStack("dom", { vars: { DNS_RESOLVER_URL: dns.resolverUrl } });
    api = (await signUp(stack.api)).api;
    await waitForHostOnline(api);
    await createRunningPods(api, [[POD, "static"]]);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    await dns?.close();
  }, 120_000);

  it("pending is not served; verified through the TXT record is; removal ends it", async () => {
    const added = await api.post(`/api/pods/${POD}/domains`, { domain: DOMAIN });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const { id, verification } = added.body as { id: string; verification: { name: string; value: string } };
    // not the pod's: the edge takes a custom name only once it is verified (docs/edge.md), so before
    // that the request is the API's (and in production Cloudflare does not route it here at all)
    const own = await page(`${POD}.pods.localhost`);
    expect(own.status).toBe(200);
    const notThePods = async () => {
      const res = await page(DOMAIN);
      expect(res.headers["x-podhost-edge"]).toBeUndefined();
      expect(res.status === 200 && res.body === own.body).toBe(false);
    };
    await notThePods();

    const early = await api.post(`/api/pods/${POD}/domains/${id}/verify`);
    expect(early.status).toBe(400);
    expect(early.body.error).toContain("no TXT record");

    dns.setTxt(verification.name, [verification.value]);
    const ok = await api.post(`/api/pods/${POD}/domains/${id}/verify`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.status).toBe("verified");
    const custom = await servedWithin(DOMAIN, 200);
    expect(custom.status).toBe(200);
    expect(custom.body).toBe(own.body);

    // kept across a stop and start of the pod
    expect((await api.post(`/api/pods/${POD}/stop`)).body.status).toBe("stopped");
    expect((await api.post(`/api/pods/${POD}/start`)).body.status).toBe("running");
    expect((await servedWithin(DOMAIN, 200, 60_000)).status).toBe(200);

    const events = await api.get(`/api/pods/${POD}/events`);
    const types = JSON.stringify(events.body);
    expect(types).toContain("domain_added");
    expect(types).toContain("domain_verified");

    expect((await api.delete(`/api/pods/${POD}/domains/${id}`)).body).toEqual({ status: "deleted" });
    // every isolate's route cache drops it within about a second (the change feed, docs/edge.md)
    await new Promise((r) => setTimeout(r, 6_000));
    await notThePods();
    expect((await page(`${POD}.pods.localhost`)).status).toBe(200);
  }, 180_000);
});
