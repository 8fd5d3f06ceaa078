import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertHost, insertPod } from "./support/agent";
import { call, registerUser } from "./support/client";
import { countingD1 } from "./support/d1-counter";

/** GET /api/pods (worker/services/pods/list.ts): what a client waiting for `running` polls. */
describe("the pod list", () => {
  it("reads its page and the counts per status in one round trip", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const teamId = user.user.active_team_id;
    await insertPod({ hostId: host.id, teamId, status: "running" });
    await insertPod({ hostId: host.id, teamId, status: "creating" });
    const { d1, roundTrips } = countingD1(env.DB);
    const res = await call("GET", "/api/pods?limit=100", undefined, { token: user.token, env: { DB: d1 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 2, status_counts: { running: 1, creating: 1 } });
    expect(res.body.pods.map((p: { server_name: string }) => p.server_name)).toEqual([host.name, host.name]);
    const listing = roundTrips.filter((sqls) => sqls.some((s) => /\bfrom "pods"/i.test(s)));
    expect(listing, JSON.stringify(listing, null, 1)).toHaveLength(1);
  });
});
