import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { MetricSample, PodState } from "../../shared/protocol";
import type { Diagnosis } from "../../shared/protocol/health-ops";
import { runScheduledJobs } from "../../worker/scheduled";
import { FakeAgent, insertHost, insertPod, podEventRecords, type TestHost, until } from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * Metrics and app health as the control plane sees them: the test plays the host's agent, sends
 * `agent:metrics` / `agent:health` on its socket, and reads the results through the public API.
 */

afterEach(() => FakeAgent.closeAll());

const HOUR = 3_600_000;
const running = (name: string, ip = "172.30.0.2"): PodState => ({ name, state: "running", ip });

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

async function userWithPod(hostId: string, preset = "static") {
  const user = await registerUser();
  const pod = await insertPod({ hostId, teamId: user.user.active_team_id, status: "running" });
  if (preset !== "static")
    await env.DB.prepare("UPDATE pods SET preset = ? WHERE id = ?").bind(preset, pod.id).run();
  return { pod, as: { token: user.token } };
}

async function onlineWithPod(preset = "static") {
  const host = await insertHost();
  const owned = await userWithPod(host.id, preset);
  const { agent } = await FakeAgent.online(host, [running(owned.pod.name)]);
  return { host, agent, ...owned };
}

const metricsRows = async (podId: string) =>
  (
    await env.DB.prepare("SELECT * FROM pod_metrics WHERE pod_id = ? ORDER BY recorded_at")
      .bind(podId)
      .all<{ recorded_at: string; cpu_usage: number }>()
  ).results;

const storedDiagnosis = async (podId: string) =>
  (
    await env.DB.prepare("SELECT app_health_diagnosis AS d FROM pods WHERE id = ?")
      .bind(podId)
      .first<{ d: string | null }>()
  )?.d ?? null;

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

const diagnosis = (over: Partial<Diagnosis> = {}): Diagnosis => ({
  class: "missing_module",
  title: 'Dependency "express" is not installed',
  detail: "The app's log says: Cannot find module 'express'",
  fix: "Install the dependencies",
  auto_fixable: true,
  confidence: 0.9,
  fix_action: "install_dependencies",
  ...over,
});

/** GET /api/pods/{name}, answering the live inspect as the agent. */
async function getPod(agent: FakeAgent, name: string, as: { token: string }) {
  const reply = call("GET", `/api/pods/${name}`, undefined, as);
  agent.ok(await agent.next("control:call"), running(name));
  return reply;
}

describe("app health diagnosis", () => {
  it("stores the agent's diagnosis on the pod (shown by GET), with one event; null clears it", async () => {
    const { agent, pod, as } = await onlineWithPod();
    const d = diagnosis();
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: d }] });
    await until(() => storedDiagnosis(pod.id), "the diagnosis");
    const shown = await getPod(agent, pod.name, as);
    expect(shown.status).toBe(200);
    expect(JSON.parse(shown.body.app_health_diagnosis)).toEqual(d);

    // The same again is no news.
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: d }] });
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: null }] });
    await until(async () => (await storedDiagnosis(pod.id)) === null, "the diagnosis to clear");
    expect((await getPod(agent, pod.name, as)).body).not.toHaveProperty("app_health_diagnosis");
    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toEqual(["health_diagnosis", "health_recovered"]);
    expect(events[0]?.message).toContain(d.title);
    expect(JSON.parse(events[0]?.metadata ?? "{}")).toEqual({
      class: "missing_module",
      auto_fixable: true,
      fix_action: "install_dependencies",
    });
  });

  it("lets a host set diagnoses of its own pods only", async () => {
    const { agent, pod } = await onlineWithPod();
    const otherHost: TestHost = await insertHost();
    const { pod: foreign } = await userWithPod(otherHost.id);
    agent.send({
      type: "agent:health",
      pods: [
        { name: foreign.name, diagnosis: diagnosis() },
        { name: pod.name, diagnosis: diagnosis() },
      ],
    });
    await until(() => storedDiagnosis(pod.id), "the own pod's diagnosis");
    expect(await storedDiagnosis(foreign.id)).toBeNull();
  });

  it("ignores a malformed report (the socket stays up)", async () => {
    const { agent, pod } = await onlineWithPod();
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: { class: "x" } }] });
    agent.send({
      type: "agent:health",
      pods: [{ name: pod.name, diagnosis: diagnosis({ class: "crash_loop" }) }],
    });
    const stored = await until(() => storedDiagnosis(pod.id), "the valid report");
    expect(JSON.parse(stored).class).toBe("crash_loop");
  });
});

describe("POST /api/pods/{name}/diagnosis/fix", () => {
  it("is 400 without a diagnosis, and with one that has no automatic fix", async () => {
    const { agent, pod, as } = await onlineWithPod("nodejs");
    const none = await call("POST", `/api/pods/${pod.name}/diagnosis/fix`, undefined, as);
    expect(none.status).toBe(400);
    expect(none.body.error).toMatch(/no diagnosis/);

    agent.send({
      type: "agent:health",
      pods: [
        {
          name: pod.name,
          diagnosis: diagnosis({ class: "out_of_memory", auto_fixable: false, fix_action: undefined }),
        },
      ],
    });
    await until(() => storedDiagnosis(pod.id), "the diagnosis");
    const manual = await call("POST", `/api/pods/${pod.name}/diagnosis/fix`, undefined, as);
    expect(manual.status).toBe(400);
    expect(manual.body.error).toMatch(/out_of_memory/);
    await agent.expectNone("control:call");
  });

  it("applies the fix on the host, clears the diagnosis and records it", async () => {
    const { agent, pod, as } = await onlineWithPod("nodejs");
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: diagnosis() }] });
    await until(() => storedDiagnosis(pod.id), "the diagnosis");

    const stranger = await registerUser();
    expect(
      (await call("POST", `/api/pods/${pod.name}/diagnosis/fix`, undefined, { token: stranger.token }))
        .status,
    ).toBe(404);

    const reply = call("POST", `/api/pods/${pod.name}/diagnosis/fix`, undefined, as);
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({
      op: "pod.health.fix",
      params: { name: pod.name, preset: "nodejs", action: "install_dependencies" },
    });
    agent.ok(sent, { ok: true, action: "install_dependencies", detail: "dependencies installed with npm" });
    const res = await reply;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "fixed", action: "install_dependencies" });
    expect(await storedDiagnosis(pod.id)).toBeNull();
    const events = await podEventRecords(pod.id);
    expect(events.at(-1)).toMatchObject({ type: "health_fixed" });
    expect(JSON.parse(events.at(-1)?.metadata ?? "{}")).toEqual({
      class: "missing_module",
      action: "install_dependencies",
    });
  });

  it("is 500 with deps_output when the install fails, and keeps the diagnosis", async () => {
    const { agent, pod, as } = await onlineWithPod("nodejs");
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: diagnosis() }] });
    await until(() => storedDiagnosis(pod.id), "the diagnosis");
    const reply = call("POST", `/api/pods/${pod.name}/diagnosis/fix`, undefined, as);
    agent.ok(await agent.next("control:call"), { ok: false, depsOutput: "npm error 404", exitCode: 1 });
    const res = await reply;
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      error: expect.stringMatching(/install failed/),
      deps_output: "npm error 404",
    });
    expect(await storedDiagnosis(pod.id)).not.toBeNull();
  });

  it("is in the OpenAPI document with the metrics routes", async () => {
    const doc = await call("GET", "/openapi.json");
    expect(doc.body.paths["/api/pods/{name}/diagnosis/fix"].post).toBeDefined();
    expect(doc.body.paths["/api/pods/{name}/metrics"].get).toBeDefined();
    expect(doc.body.paths["/api/pods/{name}/metrics/history"].get).toBeDefined();
    expect(doc.body.components.schemas.Metrics).toBeDefined();
    expect(doc.body.components.schemas.DiagnosisFixed).toBeDefined();
  });
});
