import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { podNameOf } from "../../worker/edge";
import { forgetCachedReads } from "../../worker/lib/isolate-cache";
import { insertHost, insertPod, uniquePodName } from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * The edge router's Worker half (docs/edge.md), without a host: which names it takes, the route
 * cache and what clears it, and its own pages. Forwarding to a real ingress is test/e2e/edge.test.ts.
 */

const visit = (host: string, path = "/") => exports.default.fetch(new Request(`http://${host}${path}`));
const podHost = (name: string) => `${name}.${env.POD_DOMAIN}`;

async function placedPod(status = "running", host: { online?: boolean; origin?: string | null } = {}) {
  const h = await insertHost();
  await env.DB.prepare("UPDATE hosts SET status = ?, ingress_origin = ? WHERE id = ?")
    .bind(
      host.online === false ? "offline" : "online",
      host.origin === undefined ? "http://127.0.0.1:9" : host.origin,
      h.id,
    )
    .run();
  const pod = await insertPod({ hostId: h.id, status });
  return { host: h, pod };
}

describe("edge router: which names are the edge's", () => {
  it("a name under the pod domain is a pod's; the domain itself and deeper names are no pod's; others are not the edge's", () => {
    expect(podNameOf("shop.pods.localhost", "pods.localhost")).toBe("shop");
    expect(podNameOf("pods.localhost", "pods.localhost")).toBe("");
    expect(podNameOf("a.shop.pods.localhost", "pods.localhost")).toBe("");
    expect(podNameOf("evilpods.localhost", "pods.localhost")).toBeNull();
    expect(podNameOf("www.customer.test", "pods.localhost")).toBeNull();
  });

  it("an unknown pod gets the branded 404 page, not the API's JSON", async () => {
    const res = await visit(podHost(uniquePodName()));
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("x-podhost-edge")).toBe("unknown");
    const html = await res.text();
    expect(html).toContain("No pod here");
    expect(html).toContain("podhost");
    expect(html).not.toContain("nginx");
  });

  it("any other name that is no verified custom domain stays the API's", async () => {
    for (const host of ["api.example.test", "localhost", "127.0.0.1"]) {
      const res = await visit(host, "/health");
      expect(res.status, host).toBe(200);
      expect(res.headers.get("x-podhost-edge")).toBeNull();
    }
  });

  it("attacker: a host name with markup is shown escaped on the page", async () => {
    // URL parsing already refuses `<` in a host name; a path with it never reaches the page
    const res = await visit(podHost("nope-x"), "/<script>");
    expect(await res.text()).not.toContain("<script>");
  });
});

describe("edge router: stopped pods and hosts away", () => {
  it("a stopped or suspended pod: 503 stopped; one still being created: 503 starting", async () => {
    for (const [status, page] of [
      ["stopped", "stopped"],
      ["suspended", "stopped"],
      ["creating", "starting"],
      ["error", "starting"],
    ] as const) {
      const { pod } = await placedPod(status);
      const res = await visit(podHost(pod.name));
      expect(res.status, status).toBe(503);
      expect(res.headers.get("x-podhost-edge")).toBe(page);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("retry-after")).toBe("5");
    }
  });

  it("a host offline, or one without an ingress origin, or one that does not answer: 503 away", async () => {
    for (const host of [{ online: false }, { origin: null }, {}]) {
      const { pod } = await placedPod("running", host);
      const res = await visit(podHost(pod.name));
      expect(res.status, JSON.stringify(host)).toBe(503);
      expect(res.headers.get("x-podhost-edge")).toBe("away");
    }
  });

  it("a deleted pod's name is an unknown pod", async () => {
    const { pod } = await placedPod("deleted");
    expect((await visit(podHost(pod.name))).status).toBe(404);
  });
});

describe("edge router: the route cache", () => {
  it("answers from the cache without D1 until a change clears it", async () => {
    const { pod } = await placedPod("stopped");
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    // a change D1 sees but no request of this isolate made: the cached route still answers
    await env.DB.prepare("UPDATE pods SET status = 'creating' WHERE id = ?").bind(pod.id).run();
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    // what every successful change through the API does in its isolate (worker/http/middleware.ts)
    forgetCachedReads();
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("starting");
  });

  it("a change through the API clears the cache: an unknown name becomes a pod once created", async () => {
    const name = uniquePodName();
    expect((await visit(podHost(name))).status).toBe(404);
    const { pod } = await placedPod("stopped");
    await env.DB.prepare("UPDATE pods SET name = ? WHERE id = ?").bind(name, pod.id).run();
    // still the cached absence
    expect((await visit(podHost(name))).status).toBe(404);
    const user = await registerUser();
    const changed = await call("POST", "/api/teams", { name: "edge cache" }, { token: user.token });
    expect(changed.status).toBeLessThan(300);
    expect((await visit(podHost(name))).headers.get("x-podhost-edge")).toBe("stopped");
  });

  it("a verified custom domain of a stopped pod is the edge's; a pending one is not", async () => {
    const { pod } = await placedPod("stopped");
    const verified = `www.${pod.name}.example.test`;
    const pending = `pending.${pod.name}.example.test`;
    const now = new Date().toISOString();
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO domains (id, pod_id, domain, status, verification_token, created_at) VALUES (?, ?, ?, 'verified', 't', ?)",
      ).bind(`dom_${crypto.randomUUID()}`, pod.id, verified, now),
      env.DB.prepare(
        "INSERT INTO domains (id, pod_id, domain, status, verification_token, created_at) VALUES (?, ?, ?, 'pending', 't', ?)",
      ).bind(`dom_${crypto.randomUUID()}`, pod.id, pending, now),
    ]);
    const res = await visit(verified);
    expect(res.status).toBe(503);
    expect(res.headers.get("x-podhost-edge")).toBe("stopped");
    const other = await visit(pending, "/health");
    expect(other.headers.get("x-podhost-edge")).toBeNull();
  });
});
