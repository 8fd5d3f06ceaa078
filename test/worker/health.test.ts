import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { Diagnosis } from "../../shared/protocol/health";
import { FakeAgent, insertHost, podEventRecords, type TestHost, until } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod, running, userWithPod } from "./support/pods";

/**
 * App health as the control plane sees it: the test plays the host's agent, sends `agent:health` on
 * its socket, and reads the results through the public API (metrics: ./metrics.test.ts).
 */

afterEach(() => FakeAgent.closeAll());

const storedDiagnosis = async (podId: string) =>
  (
    await env.DB.prepare("SELECT app_health_diagnosis AS d FROM pods WHERE id = ?")
      .bind(podId)
      .first<{ d: string | null }>()
  )?.d ?? null;

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

  it("applies reports sent back to back in their order: the last one stands, with one event per change", async () => {
    const { agent, pod } = await onlineWithPod();
    const d = diagnosis();
    // a problem found, repeated, gone, found again, gone: what an agent reports over a few passes
    const sequence = [d, d, null, d, d, null, d, null];
    for (const next of sequence)
      agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: next }] });
    // eight reports, each a D1 read and batch in the host's object: more than until's 3 s on a loaded CI
    await until(async () => (await podEventRecords(pod.id)).length >= 6 || undefined, "six events", 15_000);
    expect(await storedDiagnosis(pod.id)).toBeNull();
    expect((await podEventRecords(pod.id)).map((e) => e.type)).toEqual([
      "health_diagnosis",
      "health_recovered",
      "health_diagnosis",
      "health_recovered",
      "health_diagnosis",
      "health_recovered",
    ]);
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
