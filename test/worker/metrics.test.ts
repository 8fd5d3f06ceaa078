import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { MetricSample } from "../../shared/protocol";
import { runScheduledJobs } from "../../worker/scheduled";
import { FakeAgent, insertHost, insertPod, until } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod, userWithPod } from "./support/pods";

/**
 * Metrics as the control plane sees them: the test plays the host's agent, sends `agent:metrics` on
 * its socket, and reads the results through the public API (app health: ./health.test.ts).
 */

afterEach(() => FakeAgent.closeAll());

const HOUR = 3_600_000;
const sample = (name: string, over: Partial<MetricSample> = {}): MetricSample => ({
  name,
  at: Date.now(),
  cpu: 12.5,
  memory: 40.25,
  storage: 1_234_567,
  netIn: 100,
  netOut: 200,
  ...over,
});

const metricsRows = async (podId: string) =>
  (
    await env.DB.prepare("SELECT * FROM pod_metrics WHERE pod_id = ? ORDER BY recorded_at")
      .bind(podId)
      .all<{ recorded_at: string; cpu_usage: number }>()
  ).results;

describe("GET /api/pods/{name}/metrics and /metrics/history", () => {
  it("answers null and [] before anything was recorded", async () => {
    const host = await insertHost();
    const { pod, as } = await userWithPod(host.id);
    const latest = await call("GET", `/api/pods/${pod.name}/metrics`, undefined, as);
    expect(latest.status).toBe(200);
    expect(latest.body).toBeNull();
    const history = await call("GET", `/api/pods/${pod.name}/metrics/history`, undefined, as);
    expect(history.status).toBe(200);
    expect(history.body).toEqual([]);
  });

  it("records the agent's samples: the newest as Metrics, the history oldest first", async () => {
    const { agent, pod, as } = await onlineWithPod();
    const now = Date.now();
    agent.send({
      type: "agent:metrics",
      samples: [
        sample(pod.name, { at: now - 3 * 60_000, cpu: 1 }),
        sample(pod.name, { at: now - 60_000, cpu: 3, netIn: 5_000, netOut: 7_000 }),
      ],
    });
    agent.send({ type: "agent:metrics", samples: [sample(pod.name, { at: now - 2 * 60_000, cpu: 2 })] });
    await until(async () => (await metricsRows(pod.id)).length === 3, "three samples in D1");

    const latest = await call("GET", `/api/pods/${pod.name}/metrics`, undefined, as);
    expect(latest.status).toBe(200);
    expect(latest.body).toEqual({
      cpu_usage: 3,
      memory_usage: 40.25,
      storage_used: 1_234_567,
      network_in: 5_000,
      network_out: 7_000,
      recorded_at: new Date(now - 60_000).toISOString(),
    });

    const history = await call("GET", `/api/pods/${pod.name}/metrics/history?hours=1`, undefined, as);
    expect(history.status).toBe(200);
    expect(history.body.map((m: { cpu_usage: number }) => m.cpu_usage)).toEqual([1, 2, 3]);
    expect(Object.keys(history.body[0]).sort()).toEqual(
      ["cpu_usage", "memory_usage", "network_in", "network_out", "recorded_at", "storage_used"].sort(),
    );
  });

  it("clamps a sample's time to the control plane's clock", async () => {
    const { agent, pod } = await onlineWithPod();
    const before = Date.now();
    agent.send({ type: "agent:metrics", samples: [sample(pod.name, { at: before + 7 * 24 * HOUR })] });
    const [row] = await until(async () => {
      const rows = await metricsRows(pod.id);
      return rows.length ? rows : undefined;
    }, "the sample");
    expect(Date.parse(row?.recorded_at ?? "")).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(row?.recorded_at ?? "")).toBeGreaterThanOrEqual(before);
  });

  it("writes a host's samples only for its own pods", async () => {
    const { agent, pod } = await onlineWithPod();
    const otherHost = await insertHost();
    const { pod: foreign } = await userWithPod(otherHost.id);
    agent.send({
      type: "agent:metrics",
      samples: [sample(foreign.name), sample("no-such-pod-here"), sample(pod.name)],
    });
    await until(async () => (await metricsRows(pod.id)).length === 1, "the host's own sample");
    expect(await metricsRows(foreign.id)).toEqual([]);
  });

  it("validates hours (1-720, integer): 400 naming the field", async () => {
    const host = await insertHost();
    const { pod, as } = await userWithPod(host.id);
    for (const hours of ["0", "721", "-1", "abc", "1.5"]) {
      const res = await call("GET", `/api/pods/${pod.name}/metrics/history?hours=${hours}`, undefined, as);
      expect(res.status, hours).toBe(400);
      expect(res.body.error).toMatch(/hours/);
    }
    expect((await call("GET", `/api/pods/${pod.name}/metrics/history?hours=720`, undefined, as)).status).toBe(
      200,
    );
  });

  it("hides another team's pod (404) and needs authentication (401)", async () => {
    const host = await insertHost();
    const { pod } = await userWithPod(host.id);
    const stranger = await registerUser();
    for (const path of [`/api/pods/${pod.name}/metrics`, `/api/pods/${pod.name}/metrics/history`]) {
      expect((await call("GET", path, undefined, { token: stranger.token })).status).toBe(404);
      expect((await call("GET", path)).status).toBe(401);
    }
  });
});

describe("metrics retention (the scheduled job)", () => {
  it("rolls complete hours up, prunes raw samples after 48 h and rollups after 30 days", async () => {
    const host = await insertHost();
    const { pod, as } = await userWithPod(host.id);
    const deleted = await insertPod({ hostId: host.id, status: "deleted" });
    const now = Date.now();
    const hourStart = Math.floor(now / HOUR) * HOUR;
    const insert = (podId: string, at: number, cpu: number, netIn: number, storage = 1000) =>
      env.DB.prepare(
        "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
        .bind(podId, new Date(at).toISOString(), cpu, cpu * 2, storage, netIn, netIn * 2)
        .run();
    const h2 = hourStart - 2 * HOUR;
    await insert(pod.id, h2 + 60_000, 10, 100, 1000);
    await insert(pod.id, h2 + 120_000, 20, 300, 3000);
    await insert(pod.id, hourStart - HOUR + 60_000, 30, 50);
    await insert(pod.id, now - 49 * HOUR, 99, 1); // past raw retention
    await insert(deleted.id, now - 60_000, 5, 5);
    await env.DB.prepare(
      "INSERT INTO pod_metrics_hourly (pod_id, hour, cpu_usage, memory_usage, storage_used, network_in, network_out, samples) VALUES (?, ?, 1, 1, 1, 1, 1, 1)",
    )
      .bind(pod.id, new Date(hourStart - 31 * 24 * HOUR).toISOString())
      .run();

    await runScheduledJobs(env, now);
    await runScheduledJobs(env, now); // idempotent

    const hourly = (
      await env.DB.prepare(
        "SELECT hour, cpu_usage, memory_usage, storage_used, network_in, network_out, samples FROM pod_metrics_hourly WHERE pod_id = ? ORDER BY hour",
      )
        .bind(pod.id)
        .all()
    ).results;
    expect(hourly).toEqual([
      {
        hour: new Date(h2).toISOString(),
        cpu_usage: 15,
        memory_usage: 30,
        storage_used: 3000,
        network_in: 400,
        network_out: 800,
        samples: 2,
      },
      {
        hour: new Date(hourStart - HOUR).toISOString(),
        cpu_usage: 30,
        memory_usage: 60,
        storage_used: 1000,
        network_in: 50,
        network_out: 100,
        samples: 1,
      },
    ]);
    expect((await metricsRows(pod.id)).map((r) => r.cpu_usage)).toEqual([10, 20, 30]);
    expect(await metricsRows(deleted.id)).toEqual([]);

    // Beyond 24 hours the history is hourly: the rollups, then the hours not rolled up yet.
    await insert(pod.id, now - 1000, 40, 7);
    const long = await call("GET", `/api/pods/${pod.name}/metrics/history?hours=48`, undefined, as);
    expect(long.status).toBe(200);
    expect(
      long.body.map((m: { recorded_at: string; cpu_usage: number }) => [m.recorded_at, m.cpu_usage]),
    ).toEqual([
      [new Date(h2).toISOString(), 15],
      [new Date(hourStart - HOUR).toISOString(), 30],
      [new Date(hourStart).toISOString(), 40],
    ]);
    const short = await call("GET", `/api/pods/${pod.name}/metrics/history?hours=24`, undefined, as);
    expect(short.body.map((m: { cpu_usage: number }) => m.cpu_usage)).toEqual([10, 20, 30, 40]);
  });

  it("a failing job does not stop the others", async () => {
    const ran: string[] = [];
    await runScheduledJobs(env, Date.now(), [
      {
        name: "broken",
        run: async () => {
          throw new Error("boom");
        },
      },
      {
        name: "fine",
        run: async (ctx) => {
          expect(ctx.db).toBeDefined();
          ran.push("fine");
        },
      },
    ]);
    expect(ran).toEqual(["fine"]);
  });
});
