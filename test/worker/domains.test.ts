import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { RECHECK_EVERY_MS, RELEASE_AFTER_MS } from "../../worker/services/domains/recheck";
import { type ControlCall, FakeAgent, podEventRecords } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Custom domains, the Worker half (docs/domains.md), against the real Worker in workerd: D1, the
 * HostAgent object, the fake agent over the real WebSocket playing the host's `pod.domains.set`,
 * and the DNS-over-HTTPS double (test/support/dns.ts, DNS_RESOLVER_URL) holding the TXT records.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
const tag = crypto.randomUUID().slice(0, 8);
let counter = 0;
/** a host name no other test uses */
const fresh = (label = "www") => `${label}.t${tag}-${++counter}.example.com`;

const list = (as: As, pod: string) => call("GET", `/api/pods/${pod}/domains`, undefined, as);
const add = (as: As, pod: string, domain: string) => call("POST", `/api/pods/${pod}/domains`, { domain }, as);
const verify = (as: As, pod: string, id: string) =>
  call("POST", `/api/pods/${pod}/domains/${id}/verify`, undefined, as);
const remove = (as: As, pod: string, id: string) =>
  call("DELETE", `/api/pods/${pod}/domains/${id}`, undefined, as);

/** Set the TXT strings of `name` in the DNS double (`[]`: none). */
async function setTxt(name: string, values: string[]) {
  const res = await fetch(new URL(`/__double/txt/${encodeURIComponent(name)}`, env.DNS_RESOLVER_URL), {
    method: "PUT",
    body: JSON.stringify({ values }),
  });
  expect(res.status).toBe(200);
}

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 5_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

/** Adds `domain`, publishes its record, verifies, and answers the host's call. */
async function verified(s: { agent: FakeAgent; as: As; pod: { name: string } }, domain: string) {
  const added = await add(s.as, s.pod.name, domain);
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  await setTxt(added.body.verification.name, [added.body.verification.value]);
  const pending = verify(s.as, s.pod.name, added.body.id);
  const c = await nextCall(s.agent, "pod.domains.set");
  const params = c.params as { name: string; domains: string[] };
  s.agent.ok(c, { domains: params.domains });
  const res = await pending;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { domain: res.body, params };
}

describe("add, list, delete", () => {
  it("201 pending with its TXT record; listed; deleted; domain_added and domain_removed", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    const res = await add(s.as, s.pod.name, domain);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      pod_name: s.pod.name,
      domain,
      status: "pending",
      verification: { type: "TXT", name: `_podhost-verify.${domain}` },
      verified_at: null,
    });
    expect(res.body.id).toMatch(/^dom_/);
    expect(res.body.verification.value).toMatch(/^podhost-verify=[0-9a-z]{32}$/);
    expect(typeof res.body.created_at).toBe("string");

    // the contract's shape: {domains: [Domain]}
    const listed = await list(s.as, s.pod.name);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ domains: [res.body] });

    // a pending domain is not on the host: its removal asks nothing of it
    const gone = await remove(s.as, s.pod.name, res.body.id);
    expect(gone.status, JSON.stringify(gone.body)).toBe(200);
    expect(gone.body).toEqual({ status: "deleted" });
    await s.agent.expectNone("control:call");
    expect((await list(s.as, s.pod.name)).body).toEqual({ domains: [] });
    expect((await remove(s.as, s.pod.name, res.body.id)).status).toBe(404);
    const types = (await podEventRecords(s.pod.id)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["domain_added", "domain_removed"]));
    // the name is free again
    expect((await add(s.as, s.pod.name, domain)).status).toBe(201);
  });

  it("upper case and one trailing dot are normalised", async () => {
    const s = await onlineWithPod();
    const domain = fresh("Shop");
    const res = await add(s.as, s.pod.name, ` ${domain.toUpperCase()}. `);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.domain).toBe(domain.toLowerCase());
  });

  it("400 for what is not a host name the pod may have", async () => {
    const s = await onlineWithPod();
    const bad = [
      "192.168.1.10",
      "[::1]",
      "::1",
      "localhost",
      "example",
      `x.${env.POD_DOMAIN}`,
      env.POD_DOMAIN,
      `a.b.${env.POD_DOMAIN.toUpperCase()}`,
      `${"a".repeat(64)}.example.com`,
      `${Array.from({ length: 50 }, () => "abcd").join(".")}.example.com`,
      "-bad.example.com",
      "bad-.example.com",
      "a..example.com",
      "*.example.com",
      "under_score.example.com",
      "exa mple.com",
      "example.com; return 200",
      "example.com\nserver_name evil.com",
      "example.com{",
      "ex\u00e4mple.com",
      "",
    ];
    for (const domain of bad) {
      const res = await add(s.as, s.pod.name, domain);
      expect(res.status, `${JSON.stringify(domain)}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(typeof res.body.error).toBe("string");
    }
    const notString = await call("POST", `/api/pods/${s.pod.name}/domains`, { domain: 42 }, s.as);
    expect(notString.status).toBe(400);
    expect((await list(s.as, s.pod.name)).body).toEqual({ domains: [] });
  });

  it("a pending claim holds nothing: another team adds the same name (201); the pod itself again is 409", async () => {
    const a = await onlineWithPod();
    const b = await onlineWithPod();
    const domain = fresh();
    // A adds the name and never verifies it: B, a stranger, adds it too
    expect((await add(a.as, a.pod.name, domain)).status).toBe(201);
    const again = await add(a.as, a.pod.name, domain);
    expect(again.status).toBe(409);
    expect(again.body.error).toContain(a.pod.name);
    const claim = await add(b.as, b.pod.name, domain.toUpperCase());
    expect(claim.status, JSON.stringify(claim.body)).toBe(201);
    expect(claim.body).toMatchObject({ domain, status: "pending" });
    // each claim has its own token: A's record does not verify B's claim
    const [aClaim] = (await list(a.as, a.pod.name)).body.domains;
    expect(claim.body.verification.value).not.toBe(aClaim.verification.value);
    await setTxt(claim.body.verification.name, [aClaim.verification.value]);
    expect((await verify(b.as, b.pod.name, claim.body.id)).status).toBe(400);
  });

  it("the first to verify owns the name: the other claims are dropped with domain_claim_dropped; later adds are 409", async () => {
    const squatter = await onlineWithPod();
    const owner = await onlineWithPod();
    const third = await onlineWithPod();
    const domain = fresh();
    const squat = await add(squatter.as, squatter.pod.name, domain);
    expect(squat.status).toBe(201);
    expect((await add(third.as, third.pod.name, domain)).status).toBe(201);
    const won = await verified(owner, domain);
    expect(won.domain).toMatchObject({ domain, status: "verified" });
    expect(won.params).toEqual({ name: owner.pod.name, domains: [domain] });

    // the others' pending claims are gone, each with an event on its own pod that names no stranger
    for (const loser of [squatter, third]) {
      expect((await list(loser.as, loser.pod.name)).body).toEqual({ domains: [] });
      const dropped = (await podEventRecords(loser.pod.id)).filter((e) => e.type === "domain_claim_dropped");
      expect(dropped).toHaveLength(1);
      expect(dropped[0]?.message).toContain(domain);
      expect(dropped[0]?.message).not.toContain(owner.pod.name);
    }
    expect((await verify(squatter.as, squatter.pod.name, squat.body.id)).status).toBe(404);
    await squatter.agent.expectNone("control:call");
    // now the name is taken, for everyone
    const late = await add(third.as, third.pod.name, domain);
    expect(late.status).toBe(409);
    expect(late.body.error).toContain(domain);
  });

  it("two pods verify one name at once: exactly one owns it, the other is 409", async () => {
    const a = await onlineWithPod();
    const b = await onlineWithPod();
    const domain = fresh();
    const claims = [];
    for (const s of [a, b]) {
      const added = await add(s.as, s.pod.name, domain);
      expect(added.status).toBe(201);
      claims.push({ s, added: added.body });
    }
    // both records published: the owner of the name's DNS let both through
    await setTxt(
      claims[0]?.added.verification.name,
      claims.map((c) => c.added.verification.value),
    );
    const answers = await Promise.all(
      claims.map(async ({ s, added }) => {
        const pending = verify(s.as, s.pod.name, added.id);
        const c = await s.agent.next("control:call", 1_500).catch(() => undefined);
        if (c) s.agent.ok(c, { domains: (c.params as { domains: string[] }).domains });
        return pending;
      }),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses, JSON.stringify(answers.map((r) => r.body))).toEqual([200, 409]);
    const rows = await env.DB.prepare("SELECT status FROM domains WHERE domain = ?").bind(domain).all();
    expect(rows.results).toEqual([{ status: "verified" }]);
  });

  it("deleting the pod drops its domains and frees the names", async () => {
    const s = await onlineWithPod();
    const domain = fresh();
    expect((await add(s.as, s.pod.name, domain)).status).toBe(201);
    const pending = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    s.agent.ok(await nextCall(s.agent, "pod.delete"), { deleted: true });
    expect((await pending).status).toBe(200);
    const rows = await env.DB.prepare("SELECT id FROM domains WHERE pod_id = ?").bind(s.pod.id).all();
    expect(rows.results).toEqual([]);
    const other = await onlineWithPod();
    expect((await add(other.as, other.pod.name, domain)).status).toBe(201);
  });
});

describe("verify", () => {
  it("400 naming what was found: no record, then a wrong one; the domain stays pending", async () => {
    const s = await onlineWithPod();
    const added = await add(s.as, s.pod.name, fresh());
    const { id, verification } = added.body;
    const none = await verify(s.as, s.pod.name, id);
    expect(none.status).toBe(400);
    expect(none.body.error).toContain(verification.name);
    expect(none.body.error).toContain("no TXT record");
    expect(none.body.error).toContain(verification.value);

    await setTxt(verification.name, ["v=spf1 -all", "podhost-verify=somethingelse"]);
    const wrong = await verify(s.as, s.pod.name, id);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toContain('"podhost-verify=somethingelse"');
    expect(wrong.body.error).toContain('"v=spf1 -all"');
    await s.agent.expectNone("control:call");
    expect((await list(s.as, s.pod.name)).body.domains[0].status).toBe("pending");
  });

  it("with the record: the host is told the pod's verified domains, then verified with domain_verified", async () => {
    const s = await onlineWithPod();
    const first = fresh("a");
    const one = await verified(s, first);
    expect(one.params).toEqual({ name: s.pod.name, domains: [first] });
    expect(one.domain).toMatchObject({ domain: first, status: "verified" });
    expect(typeof one.domain.verified_at).toBe("string");

    // a second one: the host gets both (the whole list)
    const second = fresh("b");
    const two = await verified(s, second);
    expect(two.params.domains).toEqual([first, second]);

    // verifying again is a no-op
    expect((await verify(s.as, s.pod.name, one.domain.id)).body.status).toBe("verified");
    await s.agent.expectNone("control:call");

    const events = await podEventRecords(s.pod.id);
    expect(events.filter((e) => e.type === "domain_verified")).toHaveLength(2);

    // removing a verified domain takes it off the host first
    const pending = remove(s.as, s.pod.name, one.domain.id);
    const c = await nextCall(s.agent, "pod.domains.set");
    expect(c.params).toEqual({ name: s.pod.name, domains: [second] });
    s.agent.ok(c, { domains: [second] });
    expect((await pending).status).toBe(200);
    expect((await list(s.as, s.pod.name)).body.domains.map((d: { domain: string }) => d.domain)).toEqual([
      second,
    ]);
  });

  it("two verifications at once: the last list the host gets has both", async () => {
    const s = await onlineWithPod();
    const names = [fresh("c"), fresh("d")];
    const ids: string[] = [];
    for (const domain of names) {
      const added = await add(s.as, s.pod.name, domain);
      await setTxt(added.body.verification.name, [added.body.verification.value]);
      ids.push(added.body.id);
    }
    let finished = false;
    const both = Promise.all(ids.map((id) => verify(s.as, s.pod.name, id))).finally(() => {
      finished = true;
    });
    let last: string[] = [];
    while (!finished) {
      const c = await s.agent.next("control:call", 300).catch(() => undefined);
      if (!c) continue;
      expect(c.op).toBe("pod.domains.set");
      last = (c.params as { domains: string[] }).domains;
      s.agent.ok(c, { domains: last });
    }
    for (const res of await both) expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect([...last].sort()).toEqual([...names].sort());
  });

  it("a host failure leaves the domain pending", async () => {
    const s = await onlineWithPod();
    const added = await add(s.as, s.pod.name, fresh());
    const { id, verification } = added.body;
    await setTxt(verification.name, [verification.value]);
    const pending = verify(s.as, s.pod.name, id);
    s.agent.fail(await nextCall(s.agent, "pod.domains.set"), "internal", "nginx said no");
    expect((await pending).status).toBe(500);
    expect((await list(s.as, s.pod.name)).body.domains[0].status).toBe("pending");
  });

  it("a resolver that fails is 503", async () => {
    const s = await onlineWithPod();
    const added = await add(s.as, s.pod.name, fresh());
    await fetch(new URL(`/__double/fail/${added.body.verification.name}`, env.DNS_RESOLVER_URL), {
      method: "POST",
    });
    const res = await verify(s.as, s.pod.name, added.body.id);
    expect(res.status).toBe(503);
    expect(typeof res.body.error).toBe("string");
  });
});

describe("re-check of verified domains (the cron)", () => {
  /** the cron's job, as the scheduled handler runs it */
  const recheck = (now: number) =>
    runScheduledJobs(
      env,
      now,
      scheduledJobs.filter((j) => j.name === "domain-recheck"),
    );
  const row = async (id: string) =>
    env.DB.prepare("SELECT status, checked_at, missing_since FROM domains WHERE id = ?").bind(id).first<{
      status: string;
      checked_at: string | null;
      missing_since: string | null;
    }>();

  it(`a record gone for ${RELEASE_AFTER_MS / 3_600_000} h releases the name (domain_released, off the host); one that comes back in time keeps it`, async () => {
    const s = await onlineWithPod();
    const kept = await verified(s, fresh("kept"));
    const lost = await verified(s, fresh("lost"));
    const t0 = Date.now();
    // not due yet: nothing looked up
    await recheck(t0);
    expect((await row(lost.domain.id))?.missing_since).toBeNull();

    // both records vanish; the first check past the interval notes it and serves on
    await setTxt(kept.domain.verification.name, []);
    await setTxt(lost.domain.verification.name, []);
    const t1 = t0 + RECHECK_EVERY_MS + 1_000;
    await recheck(t1);
    for (const d of [kept, lost]) {
      const r = await row(d.domain.id);
      expect(r?.status).toBe("verified");
      expect(Date.parse(r?.missing_since ?? "")).toBe(t1);
    }
    await s.agent.expectNone("control:call");

    // one comes back; the other stays gone past the stated time
    await setTxt(kept.domain.verification.name, [kept.domain.verification.value]);
    const t2 = t1 + RELEASE_AFTER_MS;
    const run = recheck(t2);
    const c = await nextCall(s.agent, "pod.domains.set");
    expect(c.params).toEqual({ name: s.pod.name, domains: [kept.domain.domain] });
    s.agent.ok(c, { domains: [kept.domain.domain] });
    await run;
    expect(await row(kept.domain.id)).toMatchObject({ status: "verified", missing_since: null });
    expect((await row(lost.domain.id))?.status).toBe("pending");
    const released = (await podEventRecords(s.pod.id)).filter((e) => e.type === "domain_released");
    expect(released).toHaveLength(1);
    expect(released[0]?.message).toContain(lost.domain.domain);

    // the released name no longer blocks anyone: another team claims and verifies it
    const other = await onlineWithPod();
    const taken = await verified(other, lost.domain.domain);
    expect(taken.domain.status).toBe("verified");
    expect((await list(s.as, s.pod.name)).body.domains.map((d: { domain: string }) => d.domain)).toEqual([
      kept.domain.domain,
    ]);
  });

  it("a name verified before re-checks existed (no checked_at) is due at once", async () => {
    const s = await onlineWithPod();
    const d = await verified(s, fresh("old"));
    await env.DB.prepare("UPDATE domains SET checked_at = NULL WHERE id = ?").bind(d.domain.id).run();
    await setTxt(d.domain.verification.name, []);
    const now = Date.now();
    await recheck(now);
    expect(await row(d.domain.id)).toMatchObject({
      status: "verified",
      missing_since: new Date(now).toISOString(),
    });
  });

  it("a resolver failure proves nothing: the domain stays verified and is not counted as missing", async () => {
    const s = await onlineWithPod();
    const d = await verified(s, fresh("flaky"));
    await fetch(new URL(`/__double/fail/${d.domain.verification.name}`, env.DNS_RESOLVER_URL), {
      method: "POST",
    });
    await recheck(Date.now() + RECHECK_EVERY_MS + RELEASE_AFTER_MS * 2);
    expect(await row(d.domain.id)).toMatchObject({ status: "verified", missing_since: null });
    await s.agent.expectNone("control:call");
  });
});

describe("another team", () => {
  it("404 on every route for another team's pod", async () => {
    const s = await onlineWithPod();
    const added = await add(s.as, s.pod.name, fresh());
    await setTxt(added.body.verification.name, [added.body.verification.value]);
    const stranger = { token: (await registerUser()).token };
    const routes: [string, string, unknown?][] = [
      ["GET", `/api/pods/${s.pod.name}/domains`],
      ["POST", `/api/pods/${s.pod.name}/domains`, { domain: fresh() }],
      ["DELETE", `/api/pods/${s.pod.name}/domains/${added.body.id}`],
      ["POST", `/api/pods/${s.pod.name}/domains/${added.body.id}/verify`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, stranger);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain(added.body.verification.value);
    }
    await s.agent.expectNone("control:call");
    expect((await list(s.as, s.pod.name)).body.domains[0].status).toBe("pending");
    // a domain id of another pod of the same team is 404 too
    expect((await verify(s.as, s.pod.name, "dom_x0")).status).toBe(404);
    expect((await call("GET", `/api/pods/${s.pod.name}/domains`)).status).toBe(401);
  });
});
