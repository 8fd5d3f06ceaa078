import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { PLANS } from "../../shared/catalog";
import { createDb } from "../../worker/db/client";
import { reserveHost } from "../../worker/services/pods/placement";
import { FakeAgent, insertHost, podRecord } from "./support/agent";
import { call, registerUser } from "./support/client";
import { countingD1 } from "./support/d1-counter";

/** What a create is told when no host has room (worker/services/pods/placement.ts). */
describe("placement without room", () => {
  const plan = PLANS[0];
  if (!plan) throw new Error("no plan in the catalog");

  it("names the one region the client chose", async () => {
    const placed = await reserveHost(createDb(env.DB), { region: "zz-named" }, plan, []);
    expect(placed).toMatchObject({
      ok: false,
      code: "unavailable",
      message: `no capacity in region zz-named for a ${plan.slug} pod; try another region or plan`,
    });
  });

  it("names every region tried when the client chose none, not only the preferred one", async () => {
    const placed = await reserveHost(
      createDb(env.DB),
      { region: "zz-near", fallbackRegions: ["zz-far", "zz-farther"] },
      plan,
      [],
    );
    expect(placed).toMatchObject({
      ok: false,
      code: "unavailable",
      message: `no capacity in any region (zz-near, zz-far, zz-farther) for a ${plan.slug} pod; try another plan or try again in a few minutes`,
    });
  });
});

afterEach(() => FakeAgent.closeAll());

/** Admission's round trips to D1 (worker/services/pods/admission.ts): each one is on the way to the 202. */
describe("admitting a pod", () => {
  it("reads, reserves and inserts in three round trips: the name and the hosts, the room and the ports, the pod", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    await FakeAgent.online(host);
    const { d1, roundTrips } = countingD1(env.DB);
    const name = `adm${crypto.randomUUID().slice(0, 8)}`;
    const res = await call(
      "POST",
      "/api/pods",
      { name, preset: "static", plan_slug: "launch", server_id: host.id },
      { token: user.token, env: { DB: d1 } },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // what admission touches: the pods and hosts tables (credentials, keys and the audit row are others)
    const admission = roundTrips.filter((sqls) =>
      sqls.some((s) => /\b(from|into|update) "(pods|hosts)"/i.test(s)),
    );
    expect(admission, JSON.stringify(admission, null, 1)).toHaveLength(3);
    expect(await podRecord(res.body.id)).toMatchObject({ status: "creating" });
  });
});
