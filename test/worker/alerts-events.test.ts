import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { Diagnosis } from "../../shared/protocol/health";
import { createDb } from "../../worker/db/client";
import { markPastDue, suspendOverdue } from "../../worker/services/billing/subscriptions";
import { createMailer } from "../../worker/services/mail/mailer";
import { markCreateFailed } from "../../worker/services/pods/create-outcome";
import { FakeAgent, insertHost, insertPod, type TestHost } from "./support/agent";
import { alertsAt, expectAlerts, watchedTeam } from "./support/alerts";
import { call, type TestUser } from "./support/client";
import { running } from "./support/pods";

/**
 * The events that come from what a host reports and from billing (docs/alerts.md): pod_error,
 * app_unhealthy (after ALERT_UNHEALTHY_AFTER_S, 1 s here), disk_full (90 % / 85 %), host_lost (after
 * ALERT_HOST_LOST_AFTER_S, 1 s here), payment_failed and team_suspended. Each fires once per
 * incident, resolves, respects the switches, and never reaches another team. The test plays the
 * host's agent (FakeAgent); webhooks go to the receiver double (test/support/webhook-receiver.ts).
 */

afterEach(() => FakeAgent.closeAll());

const RECEIVER = env.WEBHOOK_RECEIVER_URL;
const db = createDb(env.DB);

/** when each alert reached `path` (the receiver's clock, ms) */
async function arrivals(path: string): Promise<number[]> {
  const res = await fetch(`${RECEIVER}/__double/received?path=${encodeURIComponent(path)}`);
  return ((await res.json()) as { data: { at: number }[] }).data.map((d) => d.at);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const switchEvent = async (
  team: { user: TestUser; teamId: string },
  body: { event: string; enabled: boolean; pod?: string },
) => call("PUT", `/api/teams/${team.teamId}/alerts/events`, body, { token: team.user.token });

async function onlineHostWith(podsOf: { teamId: string; count: number }[]) {
  const host = await insertHost();
  const made: { id: string; name: string; teamId: string }[] = [];
  for (const { teamId, count } of podsOf)
    for (let i = 0; i < count; i++) made.push({ ...(await insertPod({ hostId: host.id, teamId })), teamId });
  const { agent } = await FakeAgent.online(
    host,
    made.map((p) => running(p.name)),
  );
  return { host, agent, pods: made };
}

const diagnosis: Diagnosis = {
  class: "crash_loop",
  title: "The app keeps crashing",
  detail: "started 5 times in the last minute",
  fix: "Read the app's error log",
  auto_fixable: false,
  confidence: 0.8,
};

describe("pod_error", () => {
  it("fires once when the host finds the pod's container gone, resolves when it runs again; a pod's switch is kept", async () => {
    const team = await watchedTeam("Olive Owner");
    const { agent, pods } = await onlineHostWith([{ teamId: team.teamId, count: 2 }]);
    const [pod, quiet] = pods as [(typeof pods)[0], (typeof pods)[0]];
    expect((await switchEvent(team, { event: "pod_error", enabled: false, pod: quiet.name })).status).toBe(
      200,
    );
    agent.podStatus({ ...running(pod.name), state: "missing" }, "the container exited");
    agent.podStatus({ ...running(quiet.name), state: "missing" }, "the container exited");
    agent.podStatus({ ...running(pod.name), state: "missing" }, "the container exited");
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired).toMatchObject({ type: "alert.firing", event: "pod_error", pod: { id: pod.id } });
    expect(fired?.summary).toContain("the container exited");
    agent.podStatus(running(pod.name));
    const hits = await expectAlerts(team.path, 2);
    expect(hits[1]).toMatchObject({ type: "alert.resolved", event: "pod_error" });
    expect(hits[1]?.incident.id).toBe(fired?.incident.id);
  });

  it("a failed creation alerts once, however often its failure is recorded; deleting the pod closes the incident quietly", async () => {
    const team = await watchedTeam("Olive Owner");
    const pod = await insertPod({ hostId: null, teamId: team.teamId, status: "creating" });
    await markCreateFailed(env, db, pod.id, "the image could not be pulled");
    await markCreateFailed(env, db, pod.id, "the image could not be pulled");
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired).toMatchObject({ event: "pod_error", pod: { name: pod.name } });
    expect(fired?.summary).toContain("creating the pod failed: the image could not be pulled");
    // deleted, its incident closes without a message
    const del = await call("DELETE", `/api/pods/${pod.name}`, undefined, { token: team.user.token });
    expect(del.status, JSON.stringify(del.body)).toBeLessThan(300);
    const open = await env.DB.prepare(
      "SELECT count(*) AS n FROM alert_incidents WHERE pod_id = ? AND resolved_at IS NULL",
    )
      .bind(pod.id)
      .first<{ n: number }>();
    expect(open?.n).toBe(0);
    await expectAlerts(team.path, 1);
  });
});

describe("app_unhealthy", () => {
  it("fires only once the diagnosis lasted ALERT_UNHEALTHY_AFTER_S, once, and resolves when it clears", async () => {
    const team = await watchedTeam("Olive Owner");
    const { agent, pods } = await onlineHostWith([{ teamId: team.teamId, count: 1 }]);
    const [pod] = pods as [(typeof pods)[0]];
    // one alert, not before the wait is over, however the diagnosis changes meanwhile
    const started = Date.now();
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis }] });
    agent.send({
      type: "agent:health",
      pods: [{ name: pod.name, diagnosis: { ...diagnosis, class: "not_responding", title: "No answer" } }],
    });
    const [fired] = await expectAlerts(team.path, 1, 1_500);
    const [arrival] = await arrivals(team.path);
    expect((arrival ?? 0) - started).toBeGreaterThanOrEqual(1_000);
    expect(fired).toMatchObject({ type: "alert.firing", event: "app_unhealthy", pod: { id: pod.id } });
    expect(fired?.summary).toContain("has been unhealthy for 1 second: ");
    agent.send({ type: "agent:health", pods: [{ name: pod.name, diagnosis: null }] });
    const hits = await expectAlerts(team.path, 2);
    expect(hits[1]).toMatchObject({ type: "alert.resolved", event: "app_unhealthy" });
  });
});

describe("disk_full", () => {
  const GIB = 1024 ** 3;
  const sample = (name: string, storage: number) => ({
    type: "agent:metrics",
    samples: [
      { name, at: Date.now(), cpu: 1, memory: 10, storage: Math.round(storage), netIn: 0, netOut: 0 },
    ],
  });

  it("fires at 90 % of the plan's disk, once, and resolves only below 85 %", async () => {
    const team = await watchedTeam("Olive Owner");
    const { agent, pods } = await onlineHostWith([{ teamId: team.teamId, count: 1 }]);
    const [pod] = pods as [(typeof pods)[0]];
    // Launch: 5 GB
    agent.send(sample(pod.name, 4.4 * GIB)); // 88 %: nothing
    await sleep(500);
    expect(await alertsAt(team.path)).toEqual([]);
    agent.send(sample(pod.name, 4.6 * GIB)); // 92 %
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired).toMatchObject({ type: "alert.firing", event: "disk_full", pod: { id: pod.id } });
    expect(fired?.summary).toContain("92 %");
    // Still over the mark: the open incident is not alerted again. (Sent once the first had its effect:
    // the local runtime delivered two messages sent in one tick in reverse under load.)
    agent.send(sample(pod.name, 4.9 * GIB));
    await sleep(500);
    expect(await alertsAt(team.path)).toHaveLength(1);
    agent.send(sample(pod.name, 4.4 * GIB)); // 88 %: between the two marks, still open
    await sleep(500);
    expect(await alertsAt(team.path)).toHaveLength(1);
    agent.send(sample(pod.name, 4 * GIB)); // 80 %
    const hits = await expectAlerts(team.path, 2);
    expect(hits[1]).toMatchObject({ type: "alert.resolved", event: "disk_full" });
  });
});

describe("host_lost", () => {
  it("alerts each team with pods on the host once, naming its pods; resolves when the agent is back", async () => {
    const a = await watchedTeam("Olive Owner");
    const b = await watchedTeam("Olive Owner");
    const c = await watchedTeam("Olive Owner");
    const { host, agent, pods } = await onlineHostWith([
      { teamId: a.teamId, count: 2 },
      { teamId: b.teamId, count: 1 },
    ]);
    const bPod = pods.find((p) => p.teamId === b.teamId);
    // b switched it off for its only pod: b hears nothing
    expect((await switchEvent(b, { event: "host_lost", enabled: false, pod: bPod?.name })).status).toBe(200);
    agent.close();
    const [fired] = await expectAlerts(a.path, 1, 1_500);
    expect(fired).toMatchObject({
      type: "alert.firing",
      event: "host_lost",
      pod: null,
      team: { id: a.teamId },
    });
    for (const p of pods.filter((p) => p.teamId === a.teamId)) expect(fired?.summary).toContain(p.name);
    expect(fired?.summary).toContain(host.name);
    expect(await alertsAt(b.path)).toEqual([]);
    expect(await alertsAt(c.path)).toEqual([]);
    await FakeAgent.online(
      host,
      pods.map((p) => running(p.name)),
    );
    const hits = await expectAlerts(a.path, 2);
    expect(hits[1]).toMatchObject({ type: "alert.resolved", event: "host_lost" });
    expect(hits[1]?.incident.id).toBe(fired?.incident.id);
  });

  it("an agent that reconnects within the wait alerts nobody", async () => {
    const a = await watchedTeam("Olive Owner");
    const { host, agent, pods } = await onlineHostWith([{ teamId: a.teamId, count: 1 }]);
    agent.close();
    await reconnect(host, pods);
    await sleep(2_000);
    expect(await alertsAt(a.path)).toEqual([]);
  });
});

async function reconnect(host: TestHost, pods: { name: string }[]) {
  await FakeAgent.online(
    host,
    pods.map((p) => running(p.name)),
  );
}

describe("payment_failed and team_suspended", () => {
  it("a failed payment alerts once, the suspension once more, and paying and resuming resolves both", async () => {
    const team = await watchedTeam("Olive Owner");
    const other = await watchedTeam("Olive Owner");
    const ctx = { db, env, mailer: createMailer(db, env) };
    await markPastDue(ctx, team.teamId);
    await markPastDue(ctx, team.teamId); // a second decline in the grace period: the same incident
    const [failed] = await expectAlerts(team.path, 1);
    expect(failed).toMatchObject({ type: "alert.firing", event: "payment_failed", pod: null });
    expect(failed?.url).toMatch(/\/app\/billing$/);
    await suspendOverdue(ctx, Date.now() + 8 * 86_400_000);
    const two = await expectAlerts(team.path, 2);
    expect(two[1]).toMatchObject({ type: "alert.firing", event: "team_suspended" });
    const resumed = await call("POST", "/api/billing/subscription/resume", undefined, {
      token: team.user.token,
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const all = await expectAlerts(team.path, 4);
    expect(
      all
        .slice(2)
        .map((x) => `${x.event}/${x.type}`)
        .sort(),
    ).toEqual(["payment_failed/alert.resolved", "team_suspended/alert.resolved"]);
    expect(await alertsAt(other.path)).toEqual([]);
  });

  it("is switched for the team only: a pod's rule for it is refused", async () => {
    const team = await watchedTeam("Olive Owner");
    const pod = await insertPod({ hostId: null, teamId: team.teamId });
    const res = await switchEvent(team, { event: "payment_failed", enabled: false, pod: pod.name });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("team's event");
    expect((await switchEvent(team, { event: "payment_failed", enabled: false })).status).toBe(200);
    await markPastDue({ db, env, mailer: createMailer(db, env) }, team.teamId);
    await sleep(1_000);
    expect(await alertsAt(team.path)).toEqual([]);
  });
});
