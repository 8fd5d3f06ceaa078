import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { FakeAgent, podEventRecords } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Custom domains' certificates (docs/domains.md, "TLS"): the Worker in workerd registers verified
 * names as Cloudflare for SaaS custom hostnames through CLOUDFLARE_API_BASE, here Cloudflare's API
 * double (test/support/cloudflare.ts), which plays Cloudflare's side of validation through its
 * `/__double/` controls. The fake agent answers the host's `pod.domains.set`; the DNS-over-HTTPS
 * double holds the TXT records that verify the names.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
type Setup = Awaited<ReturnType<typeof onlineWithPod>>;
const tag = crypto.randomUUID().slice(0, 8);
let counter = 0;
const fresh = (label = "www") => `${label}.t${tag}-${++counter}.example.org`;
const cf = (path: string, init?: RequestInit) => fetch(new URL(path, env.CLOUDFLARE_API_BASE), init);
/** without Cloudflare settings, as a local `npm start` */
const unconfigured = { CLOUDFLARE_API_TOKEN: undefined, CLOUDFLARE_ZONE_ID: undefined };

interface DoubleHostname {
  id: string;
  hostname: string;
  status: string;
  ssl: { method: string; type: string; status: string; validation_errors?: unknown[] };
  /** validation restarts (PATCHes) the double got for it */
  restarts: number;
}

/** The custom hostnames the double holds for `hostname` (none, or one). */
async function registered(hostname: string): Promise<DoubleHostname[]> {
  const all = (await (await cf("/__double/hostnames")).json()) as DoubleHostname[];
  return all.filter((h) => h.hostname === hostname);
}

/** Cloudflare's side: the hostname's validation moves on. */
async function cloudflareSays(hostname: string, state: Record<string, unknown>) {
  const res = await cf(`/__double/state/${hostname}`, { method: "POST", body: JSON.stringify(state) });
  expect(res.status).toBe(200);
}

async function cloudflareFails(hostname: string, failing: boolean) {
  await cf(`/__double/fail/${hostname}`, { method: failing ? "POST" : "DELETE" });
}

const list = async (as: As, pod: string) =>
  (await call("GET", `/api/pods/${pod}/domains`, undefined, as)).body.domains as Record<string, unknown>[];

/** Adds `domain` to the pod, publishes its record and verifies it (the host's call answered). */
async function verified(s: Setup, domain: string, overrides?: Partial<Cloudflare.Env>) {
  const added = await call("POST", `/api/pods/${s.pod.name}/domains`, { domain }, s.as);
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  expect(added.body.tls_status).toBeNull();
  const { name, value } = added.body.verification;
  const put = await fetch(new URL(`/__double/txt/${encodeURIComponent(name)}`, env.DNS_RESOLVER_URL), {
    method: "PUT",
    body: JSON.stringify({ values: [value] }),
  });
  expect(put.status).toBe(200);
  const pending = call(
    "POST",
    `/api/pods/${s.pod.name}/domains/${added.body.id}/verify`,
    undefined,
    overrides ? { ...s.as, env: overrides } : s.as,
  );
  const c = await s.agent.next("control:call", 5_000);
  expect(c.op).toBe("pod.domains.set");
  s.agent.ok(c, { domains: (c.params as { domains: string[] }).domains });
  const res = await pending;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; domain: string; status: string; tls_status: string | null };
}

/** The cron's `domain-tls` job, run until `done` holds (other files' domains share the queue). */
async function pollUntil(done: () => Promise<boolean>, overrides: Partial<Cloudflare.Env> = {}) {
  const job = scheduledJobs.filter((j) => j.name === "domain-tls");
  for (let run = 0; run < 15; run++) {
    await runScheduledJobs({ ...env, ...overrides }, Date.now(), job);
    if (await done()) return;
  }
  throw new Error("the domain-tls job did not get there in 15 runs");
}

const tlsStatusOf = async (id: string) =>
  (
    await env.DB.prepare("SELECT tls_status FROM domains WHERE id = ?")
      .bind(id)
      .first<{ tls_status: string | null }>()
  )?.tls_status;

const deletePod = async (s: Setup) => {
  const pending = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
  const c = await s.agent.next("control:call", 5_000);
  expect(c.op).toBe("pod.delete");
  s.agent.ok(c, { deleted: true });
  expect((await pending).status).toBe(200);
};

describe("registration and the certificate's state", () => {
  it("verification registers the name (http DV), pending; the cron polls it to active with a domain_tls event", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain);
    expect(d).toMatchObject({ status: "verified", tls_status: "pending" });
    const [h] = await registered(domain);
    expect(h).toMatchObject({
      hostname: domain,
      ssl: { method: "http", type: "dv", status: "pending_validation" },
    });
    expect((await list(s.as, s.pod.name))[0]?.tls_status).toBe("pending");

    await cloudflareSays(domain, { status: "active", ssl_status: "active" });
    await pollUntil(async () => (await tlsStatusOf(d.id)) === "active");
    expect((await list(s.as, s.pod.name))[0]?.tls_status).toBe("active");
    const events = (await podEventRecords(s.pod.id)).filter((e) => e.type === "domain_tls");
    expect(events).toHaveLength(1);
    expect(events[0]?.message).toContain(domain);
    expect(events[0]?.message).toContain("active");
    // still one custom hostname for the name
    expect(await registered(domain)).toHaveLength(1);
  });

  it("verifying a verified domain again looks at its certificate (the existing verification path)", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain);
    await cloudflareSays(domain, { status: "active", ssl_status: "active" });
    const again = await call("POST", `/api/pods/${s.pod.name}/domains/${d.id}/verify`, undefined, s.as);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "verified", tls_status: "active" });
    await s.agent.expectNone("control:call");
  });

  it("a certificate whose validation fails says why; a timed-out validation too", async () => {
    const s = await onlineWithPod();
    const caa = fresh("caa");
    const d = await verified(s, caa);
    await cloudflareSays(caa, {
      validation_errors: [
        "caa_error: the CAA record of example.org does not allow the certificate authority",
      ],
    });
    await pollUntil(async () => (await tlsStatusOf(d.id))?.startsWith("failed:") === true);
    const [shown] = await list(s.as, s.pod.name);
    expect(shown?.tls_status).toBe(
      "failed: caa_error: the CAA record of example.org does not allow the certificate authority",
    );
    const event = (await podEventRecords(s.pod.id)).find((e) => e.type === "domain_tls");
    expect(event?.message).toContain("CAA record");

    const late = fresh("late");
    const t = await verified(s, late);
    await cloudflareSays(late, { ssl_status: "validation_timed_out" });
    await pollUntil(async () => (await tlsStatusOf(t.id)) === "failed: certificate validation timed out");
  });

  it("verifying a domain whose validation failed restarts it (PATCH, same ssl settings): pending, said in an event, then active", async () => {
    const s = await onlineWithPod();
    const domain = fresh("retry");
    const d = await verified(s, domain);
    const verify = (as: As = s.as, pod = s.pod.name) =>
      call("POST", `/api/pods/${pod}/domains/${d.id}/verify`, undefined, as);
    // pending, not failed: verifying again only looks (no restart)
    expect((await verify()).body.tls_status).toBe("pending");
    expect((await registered(domain))[0]?.restarts).toBe(0);

    await cloudflareSays(domain, { ssl_status: "validation_timed_out" });
    await pollUntil(async () => (await tlsStatusOf(d.id)) === "failed: certificate validation timed out");
    // another team cannot restart it (404, nothing sent to Cloudflare)
    const stranger = await onlineWithPod();
    expect((await verify(stranger.as)).status).toBe(404);
    expect((await verify(stranger.as, stranger.pod.name)).status).toBe(404);
    expect((await registered(domain))[0]?.restarts).toBe(0);

    // Cloudflare failing at the restart: 503 saying so, the failure kept as it was
    await cloudflareFails(domain, true);
    const refused = await verify();
    expect(refused.status).toBe(503);
    expect(refused.body.error).toContain("Internal server error (1000), HTTP 500");
    expect(await tlsStatusOf(d.id)).toBe("failed: certificate validation timed out");
    await cloudflareFails(domain, false);

    const restarted = await verify();
    expect(restarted.status).toBe(200);
    expect(restarted.body).toMatchObject({ status: "verified", tls_status: "pending" });
    const [h] = await registered(domain);
    expect(h).toMatchObject({
      restarts: 1,
      status: "pending",
      ssl: { method: "http", type: "dv", status: "pending_validation" },
    });
    expect(await registered(domain)).toHaveLength(1);
    expect((await list(s.as, s.pod.name))[0]?.tls_status).toBe("pending");
    await s.agent.expectNone("control:call");
    const said = (await podEventRecords(s.pod.id)).filter((e) => e.type === "domain_tls");
    expect(said.at(-1)?.message).toContain("validation was restarted");
    expect(said.at(-1)?.message).toContain("certificate validation timed out");

    await cloudflareSays(domain, { status: "active", ssl_status: "active" });
    await pollUntil(async () => (await tlsStatusOf(d.id)) === "active");
    // active: verifying again restarts nothing
    expect((await verify()).body.tls_status).toBe("active");
    expect((await registered(domain))[0]?.restarts).toBe(1);
  });

  it("a failed validation whose custom hostname Cloudflare no longer has is registered anew on verify", async () => {
    const s = await onlineWithPod();
    const domain = fresh("gone");
    const d = await verified(s, domain);
    await cloudflareSays(domain, { validation_errors: ["caa_error: not allowed"] });
    await pollUntil(async () => (await tlsStatusOf(d.id))?.startsWith("failed:") === true);
    const [old] = await registered(domain);
    // deleted at Cloudflare behind the service's back (the dashboard, another tool)
    const zone = env.CLOUDFLARE_ZONE_ID;
    const gone = await cf(`/zones/${zone}/custom_hostnames/${old?.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${env.CLOUDFLARE_API_TOKEN}` },
    });
    expect(gone.status).toBe(200);
    const again = await call("POST", `/api/pods/${s.pod.name}/domains/${d.id}/verify`, undefined, s.as);
    expect(again.status).toBe(200);
    expect(again.body.tls_status).toBe("pending");
    const [fresh_] = await registered(domain);
    expect(fresh_?.id).not.toBe(old?.id);
    const row = await env.DB.prepare("SELECT tls_hostname_id FROM domains WHERE id = ?")
      .bind(d.id)
      .first<{ tls_hostname_id: string }>();
    expect(row?.tls_hostname_id).toBe(fresh_?.id);
  });

  it("Cloudflare unreachable at verification: verified all the same, tls pending; the cron registers it later", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    await cloudflareFails(domain, true);
    const d = await verified(s, domain);
    expect(d).toMatchObject({ status: "verified", tls_status: "pending" });
    expect(await registered(domain)).toEqual([]);
    await cloudflareFails(domain, false);
    await pollUntil(async () => (await registered(domain)).length === 1);
    const row = await env.DB.prepare("SELECT tls_hostname_id FROM domains WHERE id = ?")
      .bind(d.id)
      .first<{ tls_hostname_id: string }>();
    expect(row?.tls_hostname_id).toBe((await registered(domain))[0]?.id);
  });

  it("without Cloudflare settings (local npm start): not_configured; registered once they are set", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain, unconfigured);
    expect(d.tls_status).toBe("not_configured");
    expect(await registered(domain)).toEqual([]);
    // the cron without settings leaves it so
    await runScheduledJobs(
      { ...env, ...unconfigured },
      Date.now(),
      scheduledJobs.filter((j) => j.name === "domain-tls"),
    );
    expect(await tlsStatusOf(d.id)).toBe("not_configured");
    // configured: the cron registers it
    await pollUntil(async () => (await tlsStatusOf(d.id)) === "pending");
    expect(await registered(domain)).toHaveLength(1);
  });
});

describe("removal leaves no custom hostname behind", () => {
  it("removing the domain deletes its custom hostname", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain);
    expect(await registered(domain)).toHaveLength(1);
    const pending = call("DELETE", `/api/pods/${s.pod.name}/domains/${d.id}`, undefined, s.as);
    s.agent.ok(await s.agent.next("control:call", 5_000), { domains: [] });
    expect((await pending).status).toBe(200);
    expect(await registered(domain)).toEqual([]);
  });

  it("Cloudflare failing at the removal: the domain goes, the hostname is queued and said so, the cron deletes it", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain);
    await cloudflareFails(domain, true);
    const pending = call("DELETE", `/api/pods/${s.pod.name}/domains/${d.id}`, undefined, s.as);
    s.agent.ok(await s.agent.next("control:call", 5_000), { domains: [] });
    expect((await pending).status).toBe(200);
    expect(await list(s.as, s.pod.name)).toEqual([]);
    expect(await registered(domain)).toHaveLength(1);
    const queued = await env.DB.prepare(
      "SELECT hostname, last_error FROM custom_hostname_removals WHERE hostname = ?",
    )
      .bind(domain)
      .first<{ hostname: string; last_error: string }>();
    expect(queued?.last_error).toContain("Internal server error (1000), HTTP 500");
    const said = (await podEventRecords(s.pod.id)).find((e) => e.type === "domain_tls");
    expect(said?.message).toContain("could not be deleted at Cloudflare");

    // still failing: kept, attempts counted
    const job = scheduledJobs.filter((j) => j.name === "domain-tls");
    await runScheduledJobs(env, Date.now(), job);
    expect(await registered(domain)).toHaveLength(1);
    await cloudflareFails(domain, false);
    await pollUntil(async () => (await registered(domain)).length === 0);
    const left = await env.DB.prepare("SELECT id FROM custom_hostname_removals WHERE hostname = ?")
      .bind(domain)
      .all();
    expect(left.results).toEqual([]);
  });

  it("deleting the pod deletes its domains' custom hostnames", async () => {
    const s = await onlineWithPod();
    const names = [fresh("a"), fresh("b")];
    for (const name of names) await verified(s, name);
    for (const name of names) expect(await registered(name)).toHaveLength(1);
    await deletePod(s);
    for (const name of names) expect(await registered(name)).toEqual([]);
  });

  it("a hostname whose deletion is still queued is adopted when the name is verified again, never registered twice", async () => {
    const a = await onlineWithPod();
    const domain = fresh();
    await verified(a, domain);
    await cloudflareFails(domain, true);
    await deletePod(a);
    await cloudflareFails(domain, false);
    const [left] = await registered(domain);
    expect(left).toBeDefined();
    // another team proves the name is theirs before the cron ran: it takes the hostname over
    const b = await onlineWithPod();
    const d = await verified(b, domain);
    expect(d.tls_status).toBe("pending");
    expect(await registered(domain)).toEqual([left]);
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "domain-tls"),
    );
    // the cron did not delete what the new owner uses
    expect(await registered(domain)).toHaveLength(1);
    const queued = await env.DB.prepare("SELECT id FROM custom_hostname_removals WHERE hostname = ?")
      .bind(domain)
      .all();
    expect(queued.results).toEqual([]);
  });
});

describe("attackers", () => {
  it("another team can neither see a domain's TLS state nor trigger its registration or removal", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const d = await verified(s, domain);
    const stranger = await onlineWithPod();
    for (const [method, path] of [
      ["GET", `/api/pods/${s.pod.name}/domains`],
      ["POST", `/api/pods/${s.pod.name}/domains/${d.id}/verify`],
      ["DELETE", `/api/pods/${s.pod.name}/domains/${d.id}`],
      // its own pod with the victim's domain id
      ["POST", `/api/pods/${stranger.pod.name}/domains/${d.id}/verify`],
      ["DELETE", `/api/pods/${stranger.pod.name}/domains/${d.id}`],
    ] as const) {
      const res = await call(method, path, undefined, stranger.as);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    await s.agent.expectNone("control:call");
    expect(await registered(domain)).toHaveLength(1);
    expect((await list(s.as, s.pod.name))[0]).toMatchObject({ status: "verified", tls_status: "pending" });
  });

  it("a name another team verified cannot be claimed (409), and a pending claim shows no TLS state nor registers anything", async () => {
    const owner = await onlineWithPod();
    const domain = fresh();
    await verified(owner, domain);
    const thief = await onlineWithPod();
    const stolen = await call("POST", `/api/pods/${thief.pod.name}/domains`, { domain }, thief.as);
    expect(stolen.status).toBe(409);
    expect(await registered(domain)).toHaveLength(1);

    // a claim its owner never verifies registers nothing, even through the cron
    const other = fresh("unverified");
    const claim = await call("POST", `/api/pods/${thief.pod.name}/domains`, { domain: other }, thief.as);
    expect(claim.status).toBe(201);
    expect(claim.body.tls_status).toBeNull();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "domain-tls"),
    );
    expect(await registered(other)).toEqual([]);
    expect((await list(thief.as, thief.pod.name))[0]?.tls_status).toBeNull();
  });

  it("a host name under the pod domain is never registered: 400 before anything reaches Cloudflare", async () => {
    const s = await onlineWithPod();
    const stranger = { token: (await registerUser()).token };
    for (const domain of [`${s.pod.name}.${env.POD_DOMAIN}`, `evil.${env.POD_DOMAIN}`, env.POD_DOMAIN]) {
      const res = await call("POST", `/api/pods/${s.pod.name}/domains`, { domain }, s.as);
      expect(res.status, domain).toBe(400);
      expect(await registered(domain)).toEqual([]);
    }
    expect(
      (await call("POST", `/api/pods/${s.pod.name}/domains`, { domain: fresh() }, stranger)).status,
    ).toBe(404);
  });
});
