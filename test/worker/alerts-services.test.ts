import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import type { PodSidecars } from "../../shared/protocol";
import { createDb } from "../../worker/db/client";
import { podEvents, podServices } from "../../worker/db/schema";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { alertsAt, expectAlerts, watchedTeam } from "./support/alerts";
import { call } from "./support/client";
import { running } from "./support/pods";

/**
 * `service_failed` after the install (docs/alerts.md, docs/services.md "After the install"): the
 * host's `agent:services` report says a database sidecar of a running pod exited, keeps restarting
 * or is gone; the service becomes `error` and the pod's incident opens once; the sidecar running
 * again makes it `running` and resolves it. The test plays the host's agent (FakeAgent); webhooks go
 * to the receiver double (test/support/webhook-receiver.ts).
 */

afterEach(() => FakeAgent.closeAll());

const db = createDb(env.DB);

/** An installed service (status `running`, a version reported) of the pod. */
async function installed(podId: string, serviceType: "postgresql" | "mysql" | "redis" = "postgresql") {
  const id = newId("svc");
  const now = new Date().toISOString();
  await db.insert(podServices).values({
    id,
    podId,
    serviceType,
    status: "running",
    version: "16.4",
    port: 5432,
    passwordEncrypted: "v2.x.y.z",
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

const serviceRow = async (id: string) =>
  (await db.select().from(podServices).where(eq(podServices.id, id)))[0];

/** Waits until the service's row has `status` (the HostAgent applies a report asynchronously). */
async function statusBecomes(id: string, status: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const row = await serviceRow(id);
    if (row?.status === status || Date.now() > deadline) return row;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const report = (agent: FakeAgent, pods: PodSidecars[]) => agent.send({ type: "agent:services", pods });

describe("service_failed after the install", () => {
  it("fires once when the sidecar exits (the same report repeated), resolves when it runs again; the service's status follows", async () => {
    const team = await watchedTeam("Sam Service");
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, teamId: team.teamId });
    const { agent } = await FakeAgent.online(host, [running(pod.name)]);
    const id = await installed(pod.id);

    // running as installed: nothing changes, nothing alerts
    report(agent, [{ name: pod.name, services: [{ type: "postgresql", state: "running" }] }]);
    const exited = [
      { name: pod.name, services: [{ type: "postgresql" as const, state: "exited" as const }] },
    ];
    report(agent, exited);
    report(agent, exited);
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired).toMatchObject({ type: "alert.firing", event: "service_failed", pod: { id: pod.id } });
    expect(fired?.summary).toContain("postgresql");
    expect(fired?.summary).toContain("exited");
    const failed = await serviceRow(id);
    expect(failed).toMatchObject({ status: "error", version: "16.4" });
    expect(failed?.errorMsg).toContain("exited");
    // the service list says so
    const listed = await call("GET", `/api/pods/${pod.name}/services`, undefined, { token: team.user.token });
    expect(listed.body[0]).toMatchObject({ service_type: "postgresql", status: "error", version: "16.4" });
    expect(listed.body[0].error_msg).toContain("exited");

    report(agent, [{ name: pod.name, services: [{ type: "postgresql", state: "running" }] }]);
    const both = await expectAlerts(team.path, 2);
    expect(both.map((a) => `${a.event}/${a.type}`)).toEqual([
      "service_failed/alert.firing",
      "service_failed/alert.resolved",
    ]);
    expect(await serviceRow(id)).toMatchObject({ status: "running", errorMsg: null });
    const events = await db.select().from(podEvents).where(eq(podEvents.podId, pod.id));
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["error", "service_running"]));

    // a second incident: the sidecar removed on the host (absent from the pod's list)
    report(agent, [{ name: pod.name, services: [] }]);
    const third = await expectAlerts(team.path, 3);
    expect(third[2]).toMatchObject({ type: "alert.firing", event: "service_failed" });
    expect(third[2]?.summary).toContain("missing");
  });

  it("a crash-looping sidecar alerts; a failed install is left as it ended; the pod's and the team's switches are kept", async () => {
    const team = await watchedTeam("Sam Service");
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, teamId: team.teamId });
    const quiet = await insertPod({ hostId: host.id, teamId: team.teamId });
    const { agent } = await FakeAgent.online(host, [running(pod.name), running(quiet.name)]);
    const off = await call(
      "PUT",
      `/api/teams/${team.teamId}/alerts/events`,
      { event: "service_failed", enabled: false, pod: quiet.name },
      { token: team.user.token },
    );
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    const loud = await installed(pod.id, "redis");
    const muted = await installed(quiet.id, "redis");
    // an install that failed: no version, its own reason; a report never makes it `running`
    const now = new Date().toISOString();
    const failedInstall = newId("svc");
    await db.insert(podServices).values({
      id: failedInstall,
      podId: pod.id,
      serviceType: "mysql",
      status: "error",
      port: 3306,
      passwordEncrypted: "v2.x.y.z",
      errorMsg: "mysql did not start: bad config",
      createdAt: now,
      updatedAt: now,
    });
    report(agent, [
      {
        name: pod.name,
        services: [
          { type: "redis", state: "restarting" },
          { type: "mysql", state: "running" },
        ],
      },
      { name: quiet.name, services: [{ type: "redis", state: "restarting" }] },
    ]);
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired).toMatchObject({ event: "service_failed", pod: { id: pod.id } });
    expect(fired?.summary).toContain("restarting");
    // the muted pod's service is `error` all the same: only its alert is off
    expect((await statusBecomes(muted, "error"))?.status).toBe("error");
    expect((await serviceRow(loud))?.status).toBe("error");
    expect(await serviceRow(failedInstall)).toMatchObject({
      status: "error",
      errorMsg: "mysql did not start: bad config",
    });

    // switched off for the whole team: a new incident on another pod stays quiet
    const teamOff = await call(
      "PUT",
      `/api/teams/${team.teamId}/alerts/events`,
      { event: "service_failed", enabled: false },
      { token: team.user.token },
    );
    expect(teamOff.status).toBe(200);
    const third = await insertPod({ hostId: host.id, teamId: team.teamId });
    const thirdService = await installed(third.id);
    report(agent, [{ name: third.name, services: [{ type: "postgresql", state: "exited" }] }]);
    expect((await statusBecomes(thirdService, "error"))?.status).toBe("error");
    await expectAlerts(team.path, 1, 500);
  });

  it("another host's report changes nothing, nor one of a stopped pod; another team never sees the alert", async () => {
    const team = await watchedTeam("Sam Service");
    const other = await watchedTeam("Sam Service");
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, teamId: team.teamId });
    const { agent } = await FakeAgent.online(host, [running(pod.name)]);
    const id = await installed(pod.id);
    // a host the pod is not on reports it gone: ignored
    const stranger = await insertHost();
    const { agent: strangerAgent } = await FakeAgent.online(stranger, []);
    report(strangerAgent, [{ name: pod.name, services: [] }]);
    await new Promise((r) => setTimeout(r, 500));
    expect((await serviceRow(id))?.status).toBe("running");
    expect(await alertsAt(team.path)).toEqual([]);
    // a stopped pod's sidecars stop with it: its own host's report of one is not a failure
    const stopped = await insertPod({ hostId: host.id, teamId: team.teamId, status: "stopped" });
    const resting = await installed(stopped.id);
    report(agent, [{ name: stopped.name, services: [] }]);

    report(agent, [{ name: pod.name, services: [] }]);
    const [fired] = await expectAlerts(team.path, 1);
    expect(fired?.team.id).toBe(team.teamId);
    expect(await alertsAt(other.path)).toEqual([]);
    expect((await serviceRow(resting))?.status).toBe("running");
    const incidents = await call("GET", `/api/teams/${other.teamId}/alerts/deliveries`, undefined, {
      token: other.user.token,
    });
    expect(JSON.stringify(incidents.body)).not.toContain(pod.id);
  });
});
