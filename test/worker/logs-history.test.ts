import { afterEach, describe, expect, it } from "vitest";
import { findPlan, PLANS } from "../../shared/catalog";
import { LOG_RANGE_MAX_DAYS } from "../../shared/protocol/inside";
import { limitsOf } from "../../worker/services/pods/spec";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * `GET /api/pods/{name}/logs?since=…&until=…` through the Worker, a FakeAgent playing the host:
 * what is refused before the host is asked (each bad value a 400 naming its field), what the host
 * is asked, and the `truncated` flag handed back. The search itself is the agent's
 * (test/agent/log-history.test.ts).
 */

afterEach(() => FakeAgent.closeAll());

async function setup() {
  const [user, host] = await Promise.all([registerUser("Historian"), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
  const { agent } = await FakeAgent.online(host, [{ name: pod.name, state: "running", ip: "10.0.0.2" }]);
  return { user, pod, agent };
}

const logs = (token: string, pod: string, query: string) =>
  call<{ error?: string; lines?: string[]; truncated?: boolean; message?: string }>(
    "GET",
    `/api/pods/${pod}/logs?${query}`,
    undefined,
    { token },
  );

describe("GET /api/pods/{name}/logs with since/until (the log history)", () => {
  it("asks the host for the range in ms, and passes `truncated` on", async () => {
    const { user, pod, agent } = await setup();
    const res = logs(
      user.token,
      pod.name,
      "source=error&grep=boom&lines=20&since=2026-11-20T00:00:00Z&until=2026-11-22T12:00:00%2B01:00",
    );
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({
      op: "pod.logs",
      params: {
        name: pod.name,
        source: "error",
        lines: 20,
        grep: "boom",
        since: Date.parse("2026-11-20T00:00:00Z"),
        until: Date.parse("2026-11-22T11:00:00Z"),
      },
    });
    agent.ok(sent, { lines: ["boom 2", "boom 1"], exists: true, truncated: true });
    const answer = await res;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ source: "error", lines: ["boom 2", "boom 1"], truncated: true });
  });

  it("defaults since to a day before until, and until to now", async () => {
    const { user, pod, agent } = await setup();
    const until = "2026-11-25T10:00:00.000Z";
    const res = logs(user.token, pod.name, `until=${until}`);
    const sent = await agent.next("control:call");
    expect(sent.params).toMatchObject({ since: Date.parse(until) - 86_400_000, until: Date.parse(until) });
    agent.ok(sent, { lines: [], exists: false });
    expect((await res).status).toBe(200);

    const since = new Date(Date.now() - 2 * 3600_000).toISOString();
    const before = Date.now();
    const res2 = logs(user.token, pod.name, `since=${since}`);
    const sent2 = await agent.next("control:call");
    const p2 = sent2.params as { since: number; until: number };
    expect(p2.since).toBe(Date.parse(since));
    expect(p2.until).toBeGreaterThanOrEqual(before);
    expect(p2.until).toBeLessThanOrEqual(Date.now());
    agent.ok(sent2, { lines: [], exists: false });
    expect((await res2).status).toBe(200);
  });

  it.each([
    ["since=yesterday", /^since: /],
    ["until=2026-13-01T00:00:00Z", /^until: /],
    ["since=2026-11-20", /^since: /],
    ["since=2026-11-22T00:00:00Z&until=2026-11-21T00:00:00Z", /^until: must not be before since/],
    [
      `since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z`,
      new RegExp(`^until: .*${LOG_RANGE_MAX_DAYS} days`),
    ],
    ["source=build&since=2026-11-20T00:00:00Z", /^source: build has no history/],
    ["follow=true&since=2026-11-20T00:00:00Z", /^since, until: not with follow=true/],
  ])("refuses %s with a 400 naming the field, before the host is asked", async (query, error) => {
    const { user, pod, agent } = await setup();
    const res = await logs(user.token, pod.name, query);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(error);
    await agent.expectNone("control:call");
  });
});

describe("log history per plan", () => {
  it("keeps more days and more bytes on a larger plan, 7 days on Launch up to 30 on the largest", () => {
    expect(findPlan("launch")?.logHistoryDays).toBe(7);
    expect(PLANS.at(-1)?.logHistoryDays).toBe(30);
    for (let i = 1; i < PLANS.length; i++) {
      const [a, b] = [PLANS[i - 1], PLANS[i]];
      expect(b?.logHistoryDays).toBeGreaterThanOrEqual(a?.logHistoryDays ?? Infinity);
      expect(b?.logHistoryMb).toBeGreaterThan(a?.logHistoryMb ?? Infinity);
    }
    // what the host is told at create and resize (agent/inside/history.ts keeps it per pod)
    const grow = findPlan("grow");
    expect(grow && limitsOf(grow)).toMatchObject({
      logDays: grow?.logHistoryDays,
      logMb: grow?.logHistoryMb,
    });
  });
});
