import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * The Logs and Metrics tabs (worker/dashboard/routes/pod-logs.tsx, pod-metrics.tsx): what the
 * server renders (the live tail's stream URL, a stopped pod's last lines, the metrics history in a
 * JSON block for the charts), the curl lines, escaping of tenant text, and the team check.
 */

afterEach(() => FakeAgent.closeAll());

const HOSTILE = `</script><script>alert(1)</script><img src=x onerror=alert(2)>`;

async function setup(status = "running") {
  const [user, host] = await Promise.all([signedIn("Logs User"), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
  return { user, host, pod };
}

const jsonBlock = (html: string, id: string) => {
  const m = new RegExp(`<script type="application/json" id="${id}">([^<]*)</script>`).exec(html);
  if (!m?.[1]) throw new Error(`no JSON block ${id}`);
  return JSON.parse(m[1]);
};

describe("the Logs tab", () => {
  it("renders a running pod's live tail without asking its host, with the API's curl lines", async () => {
    const { user, pod } = await setup();
    const res = await page(`/app/pods/${pod.name}/logs?source=web&grep=${encodeURIComponent("GET /")}`, {
      session: user.session,
    });
    expect(res.status).toBe(200);
    const stream = `/api/pods/${pod.name}/logs?follow=true&amp;source=web&amp;lines=200&amp;grep=GET+%2F`;
    expect(res.text).toContain(`data-logs-stream="${stream}"`);
    expect(res.text).toContain(`<option value="web" selected="">web</option>`);
    expect(res.text).toMatch(
      /curl &#39;http:\/\/localhost:8787\/api\/pods\/[a-z0-9-]+\/logs\?follow=true&amp;source=web/,
    );
    expect(res.text).toContain("/app/assets/logs.js?v=");
    expect(jsonBlock(res.text, "logs-initial")).toEqual([]);
  });

  it("shows a stopped pod's last lines, read through the API's verb, escaped", async () => {
    const { user, host, pod } = await setup("stopped");
    const { agent } = await FakeAgent.online(host, [{ name: pod.name, state: "stopped", ip: null }]);
    const res = page(`/app/pods/${pod.name}/logs`, { session: user.session });
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.logs", params: { name: pod.name, source: "app", lines: 200 } });
    agent.ok(sent, { lines: ["started", HOSTILE], exists: true });
    const html = (await res).text;
    expect(html).not.toContain("data-logs-stream");
    expect(html).toContain("not running");
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(jsonBlock(html, "logs-initial")).toEqual(["started", HOSTILE]);
  });

  it("escapes a hostile filter, and falls back to app for an unknown source", async () => {
    const { user, pod } = await setup();
    const res = await page(
      `/app/pods/${pod.name}/logs?source=../../etc&grep=${encodeURIComponent(HOSTILE)}`,
      {
        session: user.session,
      },
    );
    expect(res.status).toBe(200);
    expect(res.text).not.toContain("<script>alert(1)");
    expect(res.text).not.toContain("<img src=x");
    expect(res.text).toContain(`<option value="app" selected="">app</option>`);
  });

  it("is a 404 page for another team's pod, and sends strangers to sign in", async () => {
    const { pod } = await setup();
    const eve = await signedIn("Eve");
    for (const tab of ["logs", "metrics"]) {
      const foreign = await page(`/app/pods/${pod.name}/${tab}`, { session: eve.session });
      expect(foreign.status).toBe(404);
      expect(foreign.text).not.toContain(pod.name);
      const anonymous = await page(`/app/pods/${pod.name}/${tab}`);
      expect(anonymous.status).toBe(302);
    }
  });
});

describe("the Metrics tab", () => {
  const insert = (podId: string, at: number, cpu: number, mem: number, disk = 1000, rx = 10, tx = 20) =>
    env.DB.prepare(
      "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
      .bind(podId, new Date(at).toISOString(), cpu, mem, disk, rx, tx)
      .run();

  it("hands the history to the charts in the page, per range, with the curl line", async () => {
    const { user, pod } = await setup();
    const now = Date.now();
    await insert(pod.id, now - 30 * 60_000, 12.5, 40, 5000, 100, 200);
    await insert(pod.id, now - 60_000, 20, 45, 6000, 300, 400);
    await insert(pod.id, now - 5 * 3_600_000, 90, 90);
    const hour = await page(`/app/pods/${pod.name}/metrics`, { session: user.session });
    expect(hour.status).toBe(200);
    const data = jsonBlock(hour.text, "metrics-data");
    expect(data.range).toBe("1h");
    expect(data.columns).toHaveLength(6);
    expect(data.columns.slice(1)).toEqual([
      [12.5, 20],
      [40, 45],
      [5000, 6000],
      [100, 300],
      [200, 400],
    ]);
    expect(data.columns[0][1]).toBe(Math.floor((now - 60_000) / 1000));
    expect(hour.text).toContain("/app/assets/uplot.js?v=");
    expect(hour.text).toContain("/app/assets/metrics.js?v=");
    expect(hour.text).toMatch(/metrics\/history\?hours=1&#39;/);
    const day = await page(`/app/pods/${pod.name}/metrics?range=24h`, { session: user.session });
    expect(jsonBlock(day.text, "metrics-data").columns[1]).toEqual([90, 12.5, 20]);
    const month = await page(`/app/pods/${pod.name}/metrics?range=30d`, { session: user.session });
    expect(jsonBlock(month.text, "metrics-data").range).toBe("30d");
    expect(month.text).toMatch(/hours=720/);
  });

  it("says so when there are no samples", async () => {
    const { user, pod } = await setup();
    const res = await page(`/app/pods/${pod.name}/metrics`, { session: user.session });
    expect(res.text).toContain("No samples in this range yet");
    expect(jsonBlock(res.text, "metrics-data").columns[0]).toEqual([]);
  });
});
