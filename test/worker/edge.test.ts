import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { podNameOf } from "../../worker/edge";
import { FEED_KEEP_MS, ROUTE_TTL_MS } from "../../worker/edge/routes";
import { forgetCachedReads } from "../../worker/lib/isolate-cache";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { insertHost, insertPod, uniquePodName } from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * The edge router's Worker half (docs/edge.md), without a host: which names it takes, the route
 * cache and what clears it (its own isolate's API changes at once, anyone's through the change
 * feed), and its own pages. Forwarding to a real ingress is test/e2e/edge.test.ts.
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
  it("answers from the cache until a change clears it", async () => {
    const { pod } = await placedPod("stopped");
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    // what every successful change through the API does in its isolate (worker/http/middleware.ts)
    await env.DB.prepare("UPDATE pods SET status = 'creating' WHERE id = ?").bind(pod.id).run();
    forgetCachedReads();
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("starting");
  });

  /** Visits `host` until `done` holds for its answer; the time it took (ms), failing past `within`. */
  async function visitUntil(host: string, done: (res: Response) => boolean, within = 10_000) {
    const t0 = Date.now();
    for (;;) {
      const res = await visit(host);
      await res.body?.cancel();
      if (done(res)) return Date.now() - t0;
      if (Date.now() - t0 > within)
        throw new Error(`${host}: still ${res.status} ${res.headers.get("x-podhost-edge")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const page = (name: string) => (res: Response) => res.headers.get("x-podhost-edge") === name;

  it("a change no request of this isolate made (a Workflow's step, the agent's report) reaches the cache through the change feed within seconds, not the route's TTL", async () => {
    const { pod } = await placedPod("stopped");
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    // written to D1 as a Workflow or another isolate writes it: nothing clears this isolate's cache
    await env.DB.prepare("UPDATE pods SET status = 'creating' WHERE id = ?").bind(pod.id).run();
    const feed = await env.DB.prepare("SELECT key FROM edge_route_changes WHERE key = ?")
      .bind(`p:${pod.name}`)
      .all();
    expect(feed.results.length).toBeGreaterThan(0);
    const took = await visitUntil(podHost(pod.name), page("starting"));
    expect(took).toBeLessThan(ROUTE_TTL_MS / 4);
  });

  it("a pod moved to another host inside a Workflow is forwarded to the new host within seconds; its host going offline too", async () => {
    const { pod } = await placedPod("running", { online: false });
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("away");
    // the new host's ingress: any origin that answers (here Cloudflare's API double, whose 404 the edge passes on)
    const to = await insertHost();
    await env.DB.prepare("UPDATE hosts SET status = 'online', ingress_origin = ? WHERE id = ?")
      .bind(env.CLOUDFLARE_API_BASE, to.id)
      .run();
    // what the pod-move Workflow's last step writes
    await env.DB.prepare("UPDATE pods SET host_id = ? WHERE id = ?").bind(to.id, pod.id).run();
    await visitUntil(
      podHost(pod.name),
      (res) => res.headers.get("x-podhost-edge") === null && res.status === 404,
    );
    // the host goes offline (a change of a host drops every route)
    await env.DB.prepare("UPDATE hosts SET status = 'offline' WHERE id = ?").bind(to.id).run();
    await visitUntil(podHost(pod.name), page("away"));
  });

  it("a custom domain verified by another isolate becomes the edge's within seconds, and stops being it once removed", async () => {
    const { pod } = await placedPod("stopped");
    const name = `late.${pod.name}.example.test`;
    const id = `dom_${crypto.randomUUID()}`;
    await env.DB.prepare(
      "INSERT INTO domains (id, pod_id, domain, status, verification_token, created_at) VALUES (?, ?, ?, 'pending', 't', ?)",
    )
      .bind(id, pod.id, name, new Date().toISOString())
      .run();
    const apiAnswer = await visit(name, "/health");
    expect(apiAnswer.headers.get("x-podhost-edge")).toBeNull();
    await env.DB.prepare("UPDATE domains SET status = 'verified' WHERE id = ?").bind(id).run();
    await visitUntil(name, page("stopped"));
    await env.DB.prepare("DELETE FROM domains WHERE id = ?").bind(id).run();
    await visitUntil(name, (res) => res.headers.get("x-podhost-edge") === null);
  });

  it("the cron prunes the feed's rows older than ten minutes", async () => {
    const now = Date.now();
    await env.DB.prepare("INSERT INTO edge_route_changes (key, at) VALUES ('p:old-one', ?), ('p:new-one', ?)")
      .bind(now - FEED_KEEP_MS - 1_000, now)
      .run();
    await runScheduledJobs(
      env,
      now,
      scheduledJobs.filter((j) => j.name === "edge-route-feed"),
    );
    const left = await env.DB.prepare(
      "SELECT key FROM edge_route_changes WHERE key IN ('p:old-one', 'p:new-one')",
    ).all();
    expect(left.results).toEqual([{ key: "p:new-one" }]);
  });

  it("a change through the API clears the cache: a stopped pod started meanwhile is forwarded", async () => {
    // the host's ingress: any origin that answers (Cloudflare's API double, whose 404 passes on)
    const { pod } = await placedPod("stopped", { origin: env.CLOUDFLARE_API_BASE });
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(pod.id).run();
    // still the cached stopped pod
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("stopped");
    const user = await registerUser();
    const changed = await call("POST", "/api/teams", { name: "edge cache" }, { token: user.token });
    expect(changed.status).toBeLessThan(300);
    const res = await visit(podHost(pod.name));
    expect(res.headers.get("x-podhost-edge")).toBeNull();
    expect(res.status).toBe(404);
  });

  it("a name that is no custom domain stays kept as the API's: its requests cost no D1 read each", async () => {
    const { pod } = await placedPod("stopped");
    const name = `api-alias.${pod.name}.example.test`;
    expect((await visit(name, "/health")).headers.get("x-podhost-edge")).toBeNull();
    // verified behind this isolate's back: the kept answer holds until the feed is read
    await env.DB.prepare(
      "INSERT INTO domains (id, pod_id, domain, status, verification_token, created_at) VALUES (?, ?, ?, 'verified', 't', ?)",
    )
      .bind(`dom_${crypto.randomUUID()}`, pod.id, name, new Date().toISOString())
      .run();
    expect((await visit(name, "/health")).headers.get("x-podhost-edge")).toBeNull();
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

describe("edge router: a pod that has just come to be", () => {
  // Written to D1 as another isolate, the HostAgent's report or a Workflow writes it: nothing clears
  // this isolate's cache, and no wait lets the change feed's background read catch up.
  it("a page requested before the pod exists answers at the next visit once it does, not a kept 404", async () => {
    const name = uniquePodName();
    expect((await visit(podHost(name))).status).toBe(404);
    expect((await visit(podHost(name))).status).toBe(404);
    const { pod } = await placedPod("stopped");
    await env.DB.prepare("UPDATE pods SET name = ? WHERE id = ?").bind(name, pod.id).run();
    expect((await visit(podHost(name))).headers.get("x-podhost-edge")).toBe("stopped");
  });

  it("a page polled while the pod is created is forwarded at the first visit after it runs", async () => {
    const { pod } = await placedPod("creating", { origin: env.CLOUDFLARE_API_BASE });
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("starting");
    expect((await visit(podHost(pod.name))).headers.get("x-podhost-edge")).toBe("starting");
    // the agent's report that the pod runs, as the HostAgent writes it
    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(pod.id).run();
    const res = await visit(podHost(pod.name));
    expect(res.headers.get("x-podhost-edge")).toBeNull();
    expect(res.status).toBe(404); // the origin's own answer, passed on
  });
});
