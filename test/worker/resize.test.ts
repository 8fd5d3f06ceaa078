import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { findPlan, type Plan } from "../../shared/catalog";
import { createDb } from "../../worker/db/client";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { claimResize, RESIZE_HOLD_MS } from "../../worker/services/pods/resize-reservation";
import { type ControlCall, FakeAgent, insertHost, podEventRecords, type TestHost } from "./support/agent";
import { call } from "./support/client";
import { running, userWithPod } from "./support/pods";

/**
 * A resize holds its plan's growth on the host from before the host is asked until the plan is
 * recorded (docs/pods.md "Resizing"). Each test cuts it at one point and checks that the host's
 * allocation ends counting the pod's recorded plan exactly once, with no reservation left.
 */

afterEach(() => FakeAgent.closeAll());

const db = createDb(env.DB);
const plan = (slug: string): Plan => {
  const p = findPlan(slug);
  if (!p) throw new Error(`no plan ${slug}`);
  return p;
};

/** A connected host whose allocation is exactly the user's one pod on `slug`. */
async function setup(slug: string) {
  const host = await insertHost();
  const owned = await userWithPod(host.id);
  const p = plan(slug);
  await env.DB.prepare("UPDATE pods SET plan_slug = ? WHERE id = ?").bind(slug, owned.pod.id).run();
  await env.DB.prepare(
    "UPDATE hosts SET allocated_cpu = ?, allocated_memory_mb = ?, allocated_disk_gb = ? WHERE id = ?",
  )
    .bind(p.cpu, p.memoryMb, p.diskGb, host.id)
    .run();
  const { agent } = await FakeAgent.online(host, [running(owned.pod.name)]);
  return { host, agent, ...owned };
}

const allocated = (hostId: string) =>
  env.DB.prepare(
    "SELECT allocated_cpu AS cpu, allocated_memory_mb AS memoryMb, allocated_disk_gb AS diskGb FROM hosts WHERE id = ?",
  )
    .bind(hostId)
    .first<{ cpu: number; memoryMb: number; diskGb: number }>();
const of = (p: Plan) => ({ cpu: p.cpu, memoryMb: p.memoryMb, diskGb: p.diskGb });

const reservations = async (podId: string) =>
  (
    await env.DB.prepare("SELECT token, to_plan, settle_after FROM pod_resizes WHERE pod_id = ?")
      .bind(podId)
      .all<{ token: string; to_plan: string; settle_after: string }>()
  ).results;

const recordedPlan = async (podId: string) =>
  (await env.DB.prepare("SELECT plan_slug FROM pods WHERE id = ?").bind(podId).first<{ plan_slug: string }>())
    ?.plan_slug;

const resizedEvents = async (podId: string) =>
  (await podEventRecords(podId)).filter((e) => e.type === "resized");

/** The next `pod.resize` the host is asked, with the memory it asks for. */
async function nextResize(agent: FakeAgent, timeoutMs = 5_000): Promise<ControlCall & { memoryMb: number }> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe("pod.resize");
  return Object.assign(c, { memoryMb: (c.params as { limits: { memoryMb: number } }).limits.memoryMb });
}

const podState = (name: string) => ({ name, state: "running", ip: "10.0.0.2" });

/** The cron's resize job as it runs `at` (default: past every hold). */
const cron = (at = Date.now() + RESIZE_HOLD_MS + 1_000) =>
  runScheduledJobs(
    env,
    at,
    scheduledJobs.filter((j) => j.name === "stuck-resizes"),
  );

describe("a resize's hold on its host's room", () => {
  it("an upsize holds the growth while the host works, then the plan is recorded: the new plan counted once", async () => {
    const s = await setup("build");
    const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    const c = await nextResize(s.agent);
    expect(c.memoryMb).toBe(plan("grow").memoryMb);
    // while the host works: the growth is held, and a row says so
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    expect((await reservations(s.pod.id)).map((r) => r.to_plan)).toEqual(["grow"]);
    s.agent.ok(c, podState(s.pod.name));
    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.plan_slug).toBe("grow");
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    expect(await reservations(s.pod.id)).toEqual([]);
    expect(await resizedEvents(s.pod.id)).toHaveLength(1);
  });

  it("a downsize takes nothing and gives its room back only once the plan is recorded", async () => {
    const s = await setup("grow");
    const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "build" }, s.as);
    const c = await nextResize(s.agent);
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    s.agent.ok(c, podState(s.pod.name));
    expect((await pending).status).toBe(200);
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
  });

  it("the host refuses: the growth goes back at once, the plan unchanged", async () => {
    const s = await setup("build");
    const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "scale" }, s.as);
    s.agent.fail(await nextResize(s.agent), "conflict", "the pod is busy");
    const res = await pending;
    expect(res.status).toBe(409);
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
    expect(await recordedPlan(s.pod.id)).toBe("build");
    expect(await resizedEvents(s.pod.id)).toEqual([]);
  });

  it("no room on the host: 409, nothing held", async () => {
    const s = await setup("build");
    // the host (8 CPUs, 16 GiB) is nearly full of other pods
    await env.DB.prepare("UPDATE hosts SET allocated_memory_mb = 16000 WHERE id = ?").bind(s.host.id).run();
    const res = await call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "turbo" }, s.as);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/no room for the turbo plan/);
    await s.agent.expectNone("control:call");
    expect((await allocated(s.host.id))?.memoryMb).toBe(16000);
    expect(await reservations(s.pod.id)).toEqual([]);
  });

  it("a second resize while one is in flight: 409 'under way', it takes nothing", async () => {
    const s = await setup("build");
    const first = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    const c = await nextResize(s.agent);
    const second = await call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "scale" }, s.as);
    expect(second.status).toBe(409);
    expect(second.body.error).toMatch(/resize of pod .* to grow is under way/);
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    s.agent.ok(c, podState(s.pod.name));
    expect((await first).status).toBe(200);
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
  });

  it("the pod being moved off its host: 409 saying so, nothing held (the move reserved its old plan elsewhere)", async () => {
    const s = await setup("build");
    await env.DB.prepare(
      `INSERT INTO pod_moves (id, pod_id, pod_name, kind, status, from_host_id, created_at)
       VALUES (?, ?, ?, 'evacuate', 'queued', ?, ?)`,
    )
      .bind(`mv_${s.pod.id}`, s.pod.id, s.pod.name, s.host.id, new Date().toISOString())
      .run();
    const res = await call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/is being moved to another server/);
    await s.agent.expectNone("control:call");
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
  });

  it("the host known to be away: 503 naming it, nothing held", async () => {
    const s = await setup("build");
    await env.DB.prepare("UPDATE hosts SET status = 'offline' WHERE id = ?").bind(s.host.id).run();
    const res = await call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    expect(res.status).toBe(503);
    expect(res.body.error).toMatch(/server .* is offline/);
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
  });
});

describe("a resize cut midway is settled: the recorded plan counted once", () => {
  it("the answer lost with the agent's socket: 503 and the growth held; the next resize first undoes it on the host, then resizes", async () => {
    const s = await setup("build");
    const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    await nextResize(s.agent);
    s.agent.close();
    const cut = await pending;
    expect(cut.status).toBe(503);
    // the host may or may not have applied grow's limits: the row stays, free to be settled now
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    const [row] = await reservations(s.pod.id);
    expect(Date.parse(row?.settle_after ?? "")).toBeLessThanOrEqual(Date.now());
    expect(await recordedPlan(s.pod.id)).toBe("build");

    const { agent } = await FakeAgent.online(s.host as TestHost, [running(s.pod.name)]);
    const again = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "scale" }, s.as);
    const undo = await nextResize(agent);
    expect(undo.memoryMb).toBe(plan("build").memoryMb);
    agent.ok(undo, podState(s.pod.name));
    const apply = await nextResize(agent);
    expect(apply.memoryMb).toBe(plan("scale").memoryMb);
    agent.ok(apply, podState(s.pod.name));
    const res = await again;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.plan_slug).toBe("scale");
    expect(await allocated(s.host.id)).toEqual(of(plan("scale")));
    expect(await reservations(s.pod.id)).toEqual([]);
    expect(await resizedEvents(s.pod.id)).toHaveLength(1);
  });

  it("the answer lost, then the plan it has asked for: the earlier attempt undone on the host, 200 on the recorded plan", async () => {
    const s = await setup("build");
    const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
    await nextResize(s.agent);
    s.agent.close();
    expect((await pending).status).toBe(503);
    const { agent } = await FakeAgent.online(s.host as TestHost, [running(s.pod.name)]);
    const again = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "build" }, s.as);
    const undo = await nextResize(agent);
    expect(undo.memoryMb).toBe(plan("build").memoryMb);
    agent.ok(undo, podState(s.pod.name));
    const res = await again;
    expect(res.status).toBe(200);
    expect(res.body.plan_slug).toBe("build");
    await agent.expectNone("control:call");
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
    expect(await resizedEvents(s.pod.id)).toEqual([]);
  });

  it("the plan's write fails after the host applied the limits: the cron puts the recorded plan's limits back and gives the growth back", async () => {
    const s = await setup("build");
    // D1 refuses this pod's plan change (as a failed write would)
    await env.DB.prepare(
      `CREATE TRIGGER refuse_plan_${s.pod.id} BEFORE UPDATE OF plan_slug ON pods WHEN NEW.id = '${s.pod.id}'
       BEGIN SELECT RAISE(ABORT, 'test: the write is refused'); END`,
    ).run();
    try {
      const pending = call("POST", `/api/pods/${s.pod.name}/resize`, { plan_slug: "grow" }, s.as);
      s.agent.ok(await nextResize(s.agent), podState(s.pod.name));
      expect((await pending).status).toBe(500);
    } finally {
      await env.DB.prepare(`DROP TRIGGER refuse_plan_${s.pod.id}`).run();
    }
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    expect(await reservations(s.pod.id)).toHaveLength(1);
    expect(await resizedEvents(s.pod.id)).toEqual([]);

    // within its hold the request may still be working on it: the cron leaves it
    await cron(Date.now());
    await s.agent.expectNone("control:call");
    expect(await reservations(s.pod.id)).toHaveLength(1);

    const job = cron();
    const undo = await nextResize(s.agent);
    expect(undo.memoryMb).toBe(plan("build").memoryMb);
    s.agent.ok(undo, podState(s.pod.name));
    await job;
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
    expect(await recordedPlan(s.pod.id)).toBe("build");
  });

  it("a request cut before the host was asked (a Worker restart): the cron settles its row, and a second run finds nothing", async () => {
    const s = await setup("build");
    const claim = await claimResize(db, {
      podId: s.pod.id,
      hostId: s.host.id,
      from: plan("build"),
      to: plan("scale"),
    });
    expect(claim.claimed).toBe(true);
    expect(await allocated(s.host.id)).toEqual(of(plan("scale")));

    const job = cron();
    s.agent.ok(await nextResize(s.agent), podState(s.pod.name));
    await job;
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
    await cron();
    await s.agent.expectNone("control:call");
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
  });

  it("the host cannot be asked: the row and its growth stay for the cron's next run", async () => {
    const s = await setup("build");
    await claimResize(db, { podId: s.pod.id, hostId: s.host.id, from: plan("build"), to: plan("grow") });
    s.agent.close();
    await s.agent.closed;
    await cron();
    expect(await allocated(s.host.id)).toEqual(of(plan("grow")));
    expect(await reservations(s.pod.id)).toHaveLength(1);

    const { agent } = await FakeAgent.online(s.host as TestHost, [running(s.pod.name)]);
    const job = cron();
    agent.ok(await nextResize(agent), podState(s.pod.name));
    await job;
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
  });

  it("the pod deleted meanwhile: its deletion gives back its plan and the resize's growth", async () => {
    const s = await setup("build");
    await claimResize(db, { podId: s.pod.id, hostId: s.host.id, from: plan("build"), to: plan("grow") });
    const deleted = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    s.agent.ok(await s.agent.next("control:call"), { deleted: true });
    expect((await deleted).status).toBe(200);
    expect(await allocated(s.host.id)).toEqual({ cpu: 0, memoryMb: 0, diskGb: 0 });
    expect(await reservations(s.pod.id)).toEqual([]);
  });

  it("the pod gone from the host some other way: the cron gives the growth back without asking the host", async () => {
    const s = await setup("build");
    await claimResize(db, { podId: s.pod.id, hostId: s.host.id, from: plan("build"), to: plan("grow") });
    // moved to another host (a lost host's pod recreated elsewhere): no container here to correct
    const other = await insertHost();
    await env.DB.prepare("UPDATE pods SET host_id = ? WHERE id = ?").bind(other.id, s.pod.id).run();
    await cron();
    await s.agent.expectNone("control:call");
    expect(await allocated(s.host.id)).toEqual(of(plan("build")));
    expect(await reservations(s.pod.id)).toEqual([]);
  });
});
