import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { findPlan } from "../../shared/catalog";
import { ServicePassword } from "../../shared/protocol/services";
import { FAIR_SHARE_LIMITS } from "../../worker/http/rate-limit";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { limitsOf } from "../../worker/services/pods/spec";
import { INSTALL_DEADLINE_MS } from "../../worker/services/services/stuck";
import { type ControlCall, FakeAgent, podEventRecords, until } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Database services, the Worker half (docs/services.md), against the real Worker in workerd: D1, the
 * HostAgent object, the pod-service Workflow, and the fake agent over the real WebSocket playing
 * the host's `service.install` / `service.remove`.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
const BUILD_LIMITS = limitsOf(findPlan("build") ?? (undefined as never));

/** A connected host and a running pod on `plan` (Build by default: services allowed). */
async function podOn(plan = "build") {
  const setup = await onlineWithPod();
  await env.DB.prepare("UPDATE pods SET plan_slug = ? WHERE id = ?").bind(plan, setup.pod.id).run();
  return setup;
}

const list = (as: As, pod: string) => call("GET", `/api/pods/${pod}/services`, undefined, as);
const install = (as: As, pod: string, service_type: string) =>
  call("POST", `/api/pods/${pod}/services`, { service_type }, as);
const credentials = (as: As, pod: string, type: string) =>
  call("GET", `/api/pods/${pod}/services/${type}/credentials`, undefined, as);

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 5_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

/** The service of `type` once its status is no longer `installing`. */
async function settled(as: As, pod: string, type: string) {
  return until(
    async () => {
      const res = await list(as, pod);
      const svc = (res.body as { service_type: string; status: string }[]).find(
        (s) => s.service_type === type,
      );
      return svc && svc.status !== "installing" ? svc : undefined;
    },
    `${type} on ${pod} to settle`,
    10_000,
  );
}

/** Installs `type` and lets the host answer with `version`; returns the password the host was given. */
async function installed(
  s: { agent: FakeAgent; as: As; pod: { name: string } },
  type: string,
  version: string,
) {
  const res = await install(s.as, s.pod.name, type);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const c = await nextCall(s.agent, "service.install");
  const params = c.params as { password: string; port: number };
  s.agent.ok(c, { version, port: { postgresql: 5432, mysql: 3306, redis: 6379 }[type] });
  expect((await settled(s.as, s.pod.name, type)).status).toBe("running");
  return params.password;
}

describe("install", () => {
  it("202 installing, the host gets the plan's limits and a generated password, then running with the reported version", async () => {
    const { pod, as, agent } = await podOn();
    const res = await install(as, pod.name, "postgresql");
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({
      pod_name: pod.name,
      service_type: "postgresql",
      status: "installing",
      host: "127.0.0.1",
      port: 5432,
    });
    expect(res.body.id).toMatch(/^svc_/);
    expect(res.body.error_msg).toBeUndefined();

    const c = await nextCall(agent, "service.install");
    const params = c.params as { name: string; type: string; password: string; limits: unknown };
    expect(params).toMatchObject({ name: pod.name, type: "postgresql", limits: BUILD_LIMITS });
    expect(ServicePassword().safeParse(params.password).success).toBe(true);
    expect(params.password).toHaveLength(32);
    agent.ok(c, { version: "14.17", port: 5432 });

    const svc = await settled(as, pod.name, "postgresql");
    expect(svc).toMatchObject({ id: res.body.id, status: "running", version: "14.17", port: 5432 });

    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["service_install", "service_running"]));
    expect(events.find((e) => e.type === "service_running")?.message).toContain("14.17");

    // The password: in the credentials only; never in the list, the events, or D1 in the clear.
    const creds = await credentials(as, pod.name, "postgresql");
    expect(creds.status).toBe(200);
    expect(creds.body).toEqual({
      service_type: "postgresql",
      status: "running",
      host: "127.0.0.1",
      port: 5432,
      username: "pod_user",
      password: params.password,
      database: "pod_user",
    });
    expect(JSON.stringify((await list(as, pod.name)).body)).not.toContain(params.password);
    expect(JSON.stringify(res.body)).not.toContain(params.password);
    expect(JSON.stringify(events)).not.toContain(params.password);
    const row = await env.DB.prepare("SELECT * FROM pod_services WHERE pod_id = ?").bind(pod.id).first();
    expect(JSON.stringify(row)).not.toContain(params.password);
    expect(row?.password_encrypted).toMatch(/^v2\./);
    expect(row).toMatchObject({ status: "running", version: "14.17", service_type: "postgresql" });
  });

  it("mysql reports MariaDB's version; redis credentials have no username or database", async () => {
    const s = await podOn("grow");
    await installed(s, "mysql", "10.11.11-MariaDB");
    const password = await installed(s, "redis", "7.0.15");
    const services = (await list(s.as, s.pod.name)).body as { service_type: string; version: string }[];
    expect(services.map((x) => [x.service_type, x.version])).toEqual([
      ["mysql", "10.11.11-MariaDB"],
      ["redis", "7.0.15"],
    ]);
    const redis = await credentials(s.as, s.pod.name, "redis");
    expect(redis.body).toEqual({
      service_type: "redis",
      status: "running",
      host: "127.0.0.1",
      port: 6379,
      password,
    });
    const mysql = await credentials(s.as, s.pod.name, "mysql");
    expect(mysql.body).toMatchObject({ port: 3306, username: "pod_user", database: "pod_user" });
    expect(mysql.body.password).not.toBe(password);
  });

  it("a host failure ends in error with error_msg and an error event; a retry keeps the password", async () => {
    const { pod, as, agent } = await podOn();
    expect((await install(as, pod.name, "mysql")).status).toBe(202);
    const first = await nextCall(agent, "service.install");
    agent.fail(first, "internal", "svc-init: the server did not accept connections within 90 s");
    const svc = await settled(as, pod.name, "mysql");
    expect(svc).toMatchObject({
      status: "error",
      error_msg: "svc-init: the server did not accept connections within 90 s",
    });
    const events = await podEventRecords(pod.id);
    const error = events.find((e) => e.type === "error");
    expect(error?.message).toContain("mysql install failed: svc-init");
    expect(events.map((e) => e.type)).not.toContain("service_running");

    // Tried again: the host adopts what the first attempt initialised, so the password is the same.
    const again = await install(as, pod.name, "mysql");
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.status).toBe("installing");
    const second = await nextCall(agent, "service.install");
    expect((second.params as { password: string }).password).toBe(
      (first.params as { password: string }).password,
    );
    agent.ok(second, { version: "10.11.11-MariaDB", port: 3306 });
    expect(await settled(as, pod.name, "mysql")).toMatchObject({ status: "running" });
    expect((await list(as, pod.name)).body).toHaveLength(1);
  });

  it("the host refusing (the pod stopped meanwhile) ends the install in error too", async () => {
    const { pod, as, agent } = await podOn();
    expect((await install(as, pod.name, "redis")).status).toBe(202);
    const c = await nextCall(agent, "service.install");
    agent.fail(c, "conflict", `pod ${pod.name} is not running`);
    expect(await settled(as, pod.name, "redis")).toMatchObject({
      status: "error",
      error_msg: `pod ${pod.name} is not running`,
    });
  });

  it("400 on a bad type or a missing body, 400 when the pod is not running, 403 on Launch, 409 twice", async () => {
    const { pod, as, agent } = await podOn();
    for (const body of [{ service_type: "mongodb" }, { service_type: "" }, {}, { service_type: ["redis"] }]) {
      const res = await call("POST", `/api/pods/${pod.name}/services`, body, as);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toContain("service_type");
    }
    expect(
      (await call("POST", `/api/pods/${pod.name}/services`, undefined, { ...as, raw: "{" })).status,
    ).toBe(400);
    expect((await credentials(as, pod.name, "mongodb")).status).toBe(400);
    expect((await call("DELETE", `/api/pods/${pod.name}/services/sqlite`, undefined, as)).status).toBe(400);

    // 409 while installing and once installed
    expect((await install(as, pod.name, "redis")).status).toBe(202);
    const twice = await install(as, pod.name, "redis");
    expect(twice.status).toBe(409);
    expect(twice.body.error).toContain("already");
    const c = await nextCall(agent, "service.install");
    agent.ok(c, { version: "7.0.15", port: 6379 });
    await settled(as, pod.name, "redis");
    expect((await install(as, pod.name, "redis")).status).toBe(409);

    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    const stopped = await install(as, pod.name, "postgresql");
    expect(stopped.status).toBe(400);
    expect(stopped.body.error).toContain("not running");

    const launch = await podOn("launch");
    const refused = await install(launch.as, launch.pod.name, "postgresql");
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain("Build plan");
    await launch.agent.expectNone("control:call");
    expect((await list(launch.as, launch.pod.name)).body).toEqual([]);
  });

  it("installs are rate limited per pod (fair share)", async () => {
    const { pod, as } = await podOn("launch");
    const { perPod } = FAIR_SHARE_LIMITS.services;
    for (let i = 0; i < perPod; i++) expect((await install(as, pod.name, "redis")).status).toBe(403);
    const limited = await install(as, pod.name, "redis");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});

describe("the stuck-service-installs cron job", () => {
  it("ends an install left installing past the deadline in error, and leaves a younger one", async () => {
    const old = await podOn();
    const young = await podOn();
    for (const s of [old, young]) {
      expect((await install(s.as, s.pod.name, "redis")).status).toBe(202);
      await nextCall(s.agent, "service.install"); // the host never answers
    }
    const past = new Date(Date.now() - INSTALL_DEADLINE_MS - 60_000).toISOString();
    await env.DB.prepare("UPDATE pod_services SET updated_at = ? WHERE pod_id = ?")
      .bind(past, old.pod.id)
      .run();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "stuck-service-installs"),
    );
    expect((await list(old.as, old.pod.name)).body[0]).toMatchObject({
      status: "error",
      error_msg: "it did not finish within 2 hours",
    });
    expect((await podEventRecords(old.pod.id)).at(-1)?.message).toBe(
      "redis install failed: it did not finish within 2 hours",
    );
    expect((await list(young.as, young.pod.name)).body[0].status).toBe("installing");
  });
});

describe("list, stopped pods, delete", () => {
  it("[] when none; a stopped pod's services show stopped, and running again when it runs", async () => {
    const s = await podOn();
    expect((await list(s.as, s.pod.name)).body).toEqual([]);
    await installed(s, "postgresql", "14.17");
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(s.pod.id).run();
    expect((await list(s.as, s.pod.name)).body[0].status).toBe("stopped");
    expect((await credentials(s.as, s.pod.name, "postgresql")).body.status).toBe("stopped");
    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(s.pod.id).run();
    expect((await list(s.as, s.pod.name)).body[0].status).toBe("running");
  });

  it("delete: the host removes it with the plan's limits, the row goes, service_removed; 404 after", async () => {
    const s = await podOn();
    await installed(s, "postgresql", "14.17");
    const pending = call("DELETE", `/api/pods/${s.pod.name}/services/postgresql`, undefined, s.as);
    const c = await nextCall(s.agent, "service.remove");
    expect(c.params).toEqual({ name: s.pod.name, type: "postgresql", limits: BUILD_LIMITS });
    s.agent.ok(c, { removed: true });
    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect((await list(s.as, s.pod.name)).body).toEqual([]);
    const events = await podEventRecords(s.pod.id);
    expect(events.at(-1)?.type).toBe("service_removed");
    expect((await credentials(s.as, s.pod.name, "postgresql")).status).toBe(404);
    expect(
      (await call("DELETE", `/api/pods/${s.pod.name}/services/postgresql`, undefined, s.as)).status,
    ).toBe(404);
    // installed again afterwards: a new password (the data went with the old one)
    await installed(s, "postgresql", "14.17");
  });

  it("delete: a host failure keeps the row, and a retry asks the host again; an install in progress is 409", async () => {
    const s = await podOn();
    await installed(s, "redis", "7.0.15");
    const pending = call("DELETE", `/api/pods/${s.pod.name}/services/redis`, undefined, s.as);
    s.agent.fail(await nextCall(s.agent, "service.remove"), "internal", "docker said no");
    const res = await pending;
    expect(res.status).toBe(500);
    expect((await list(s.as, s.pod.name)).body).toHaveLength(1);
    // asked again, the host is asked again (not answered the first failure from the journal)
    const again = call("DELETE", `/api/pods/${s.pod.name}/services/redis`, undefined, s.as);
    s.agent.ok(await nextCall(s.agent, "service.remove"), { removed: true });
    expect((await again).status).toBe(200);

    expect((await install(s.as, s.pod.name, "mysql")).status).toBe(202);
    const busy = await call("DELETE", `/api/pods/${s.pod.name}/services/mysql`, undefined, s.as);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toContain("installing");
  });

  it("deleting the pod drops its service rows", async () => {
    const s = await podOn();
    await installed(s, "redis", "7.0.15");
    const pending = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    s.agent.ok(await nextCall(s.agent, "pod.delete"), { deleted: true });
    expect((await pending).status).toBe(200);
    const rows = await env.DB.prepare("SELECT id FROM pod_services WHERE pod_id = ?").bind(s.pod.id).all();
    expect(rows.results).toEqual([]);
  });
});

describe("another team", () => {
  it("404 on every route for another team's pod, and its password is never shown", async () => {
    const s = await podOn();
    const password = await installed(s, "postgresql", "14.17");
    const stranger = { token: (await registerUser()).token };
    const routes: [string, string, unknown?][] = [
      ["GET", `/api/pods/${s.pod.name}/services`],
      ["POST", `/api/pods/${s.pod.name}/services`, { service_type: "redis" }],
      ["DELETE", `/api/pods/${s.pod.name}/services/postgresql`],
      ["GET", `/api/pods/${s.pod.name}/services/postgresql/credentials`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, stranger);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain(password);
    }
    await s.agent.expectNone("control:call");
    expect((await list(s.as, s.pod.name)).body).toHaveLength(1);
    expect((await call("GET", `/api/pods/${s.pod.name}/services`)).status).toBe(401);
  });

  it("a victim's sealed password copied into the attacker's row in D1 does not open there", async () => {
    // The attacker can write D1 (a leaked export put back, a write path gone wrong) and read its own
    // credentials: the sealed value is bound to the victim's pod and type, so it opens nowhere else.
    const victim = await podOn();
    const victimPassword = await installed(victim, "postgresql", "14.17");
    const attacker = await podOn();
    await installed(attacker, "postgresql", "14.17");
    await installed(attacker, "mysql", "10.11.11-MariaDB");
    const copy = await env.DB.prepare(
      "UPDATE pod_services SET password_encrypted = (SELECT password_encrypted FROM pod_services WHERE pod_id = ? AND service_type = 'postgresql') WHERE pod_id = ? AND service_type = 'postgresql'",
    )
      .bind(victim.pod.id, attacker.pod.id)
      .run();
    expect(copy.meta.changes).toBe(1);
    const read = await credentials(attacker.as, attacker.pod.name, "postgresql");
    expect(read.status).toBe(500);
    expect(read.body.error).toContain("does not belong where it is stored");
    expect(JSON.stringify(read.body)).not.toContain(victimPassword);
    // nor does its own password of another type open as this one
    await env.DB.prepare(
      "UPDATE pod_services SET password_encrypted = (SELECT password_encrypted FROM pod_services WHERE pod_id = ?1 AND service_type = 'mysql') WHERE pod_id = ?1 AND service_type = 'postgresql'",
    )
      .bind(attacker.pod.id)
      .run();
    expect((await credentials(attacker.as, attacker.pod.name, "postgresql")).status).toBe(500);
    expect((await credentials(victim.as, victim.pod.name, "postgresql")).body.password).toBe(victimPassword);
  });
});
