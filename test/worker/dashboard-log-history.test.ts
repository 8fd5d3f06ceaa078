import { afterEach, describe, expect, it } from "vitest";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * The Logs tab's history range (worker/dashboard/routes/pod-logs.tsx, docs/dashboard.md "Logs"):
 * the From/To fields (UTC) read the log's history once through the API's verb, with its curl line,
 * escaped, the API's refusal shown as text, and another team's pod a 404 page.
 */

afterEach(() => FakeAgent.closeAll());

const HOSTILE = `</script><script>alert(1)</script><img src=x onerror=alert(2)>`;

async function setup() {
  const [user, host] = await Promise.all([signedIn("History User"), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
  const { agent } = await FakeAgent.online(host, [{ name: pod.name, state: "running", ip: "172.30.0.9" }]);
  return { user, agent, pod };
}

const jsonBlock = (html: string, id: string) => {
  const m = new RegExp(`<script type="application/json" id="${id}">([^<]*)</script>`).exec(html);
  if (!m?.[1]) throw new Error(`no JSON block ${id}`);
  return JSON.parse(m[1]);
};

describe("the Logs tab's history range", () => {
  it("offers From and To (UTC) fields on the live tail", async () => {
    const { user, pod } = await setup();
    const res = await page(`/app/pods/${pod.name}/logs?source=web`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toMatch(
      /<label>From \(UTC\)<input type="datetime-local" name="since" value="" step="60"\/?>/,
    );
    expect(res.text).toMatch(/name="until"/);
    expect(res.text).toContain("data-logs-stream=");
  });

  it("reads the range through the API's verb, shows the lines escaped, no live tail, and the range's curl line", async () => {
    const { user, agent, pod } = await setup();
    const res = page(
      `/app/pods/${pod.name}/logs?source=web&grep=needle&since=2026-11-20T08:30&until=2026-11-27T12:00`,
      { session: user.session },
    );
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({
      op: "pod.logs",
      params: {
        name: pod.name,
        source: "web",
        lines: 1000,
        grep: "needle",
        since: Date.parse("2026-11-20T08:30:00Z"),
        until: Date.parse("2026-11-27T12:00:00Z"),
      },
    });
    // the host answers a filtered read newest first; the page shows them oldest first
    agent.ok(sent, { lines: [`newest needle ${HOSTILE}`, "older needle"], exists: true, truncated: true });
    const html = (await res).text;
    expect(html).not.toContain("data-logs-stream");
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(jsonBlock(html, "logs-initial")).toEqual(["older needle", `newest needle ${HOSTILE}`]);
    expect(html).toContain("from 2026-11-20T08:30 UTC to 2026-11-27T12:00 UTC: 2 matching lines");
    expect(html).toContain("A bound cut the search short");
    expect(html).toContain('value="2026-11-20T08:30"');
    expect(html).toContain("Back to the live tail");
    expect(html).toContain(
      `/api/pods/${pod.name}/logs?source=web&amp;lines=1000&amp;grep=needle&amp;since=2026-11-20T08%3A30%3A00Z&amp;until=2026-11-27T12%3A00%3A00Z`,
    );
  });

  it("shows the API's refusal as text: a range backwards, a source without history, a time it cannot read", async () => {
    const { user, agent, pod } = await setup();
    const cases: [string, RegExp][] = [
      ["source=web&since=2026-11-27T12:00&until=2026-11-20T12:00", /until: must not be before since/],
      ["source=build&since=2026-11-27T12:00", /source: build has no history/],
      [`source=app&since=${encodeURIComponent(HOSTILE)}`, /since: must be an ISO 8601 time/],
    ];
    for (const [query, error] of cases) {
      const res = await page(`/app/pods/${pod.name}/logs?${query}`, { session: user.session });
      expect(res.status).toBe(200);
      expect(res.text).toMatch(error);
      expect(res.text).toContain('role="alert"');
      expect(res.text).not.toContain("<script>alert(1)");
    }
    // nothing reached the host
    await agent.expectNone("control:call");
  });

  it("is a 404 page for another team's pod (its history is never read), and sends strangers to sign in", async () => {
    const { agent, pod } = await setup();
    const eve = await signedIn("Eve");
    const query = "source=web&since=2026-11-20T08:30";
    const foreign = await page(`/app/pods/${pod.name}/logs?${query}`, { session: eve.session });
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain(pod.name);
    await agent.expectNone("control:call");
    expect((await page(`/app/pods/${pod.name}/logs?${query}`)).status).toBe(302);
  });
});
