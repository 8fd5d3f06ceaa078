import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import {
  type ControlCall,
  FakeAgent,
  insertHost,
  insertPod,
  podEventRecords,
  podRecord,
  until,
} from "./support/agent";
import { call } from "./support/client";
import { operatorToken } from "./support/operator";

/**
 * The reconciler's control-plane side (worker/services/reconcile/host.ts, docs/reliability.md
 * "Drift"): who may start a pass, what the host is told (its own pods only), what the Worker does
 * with the host's answer (a pod without its container marked), R2's orphans, and --dry-run. The
 * host's side on a real engine: test/e2e/reconcile.test.ts.
 */

const auth = async () => ({ headers: { authorization: `Bearer ${await operatorToken()}` } });

/** Connects an agent that answers the reconciler's calls itself, says hello, and takes the hello's pass. */
async function agentOf(host: Awaited<ReturnType<typeof insertHost>>, running: string[]) {
  const agent = await FakeAgent.connect(host.token);
  agent.answerReconcile = false;
  await agent.hello(running.map((name) => ({ name, state: "running" as const, ip: "10.0.0.2" })));
  const helloPass = await agent.next("control:call");
  return { agent, helloPass };
}

const noDrift = { findings: [], missing: [] };

async function putObject(key: string) {
  await env.BLOBS.put(key, "archive bytes");
  return key;
}

const exists = async (key: string) => (await env.BLOBS.head(key)) !== null;

describe("reconcile: the control plane's side", () => {
  it("refuses every caller without a live operator token: none, a user's, a host's, forged", async () => {
    const host = await insertHost();
    for (const authorization of [
      undefined,
      "Bearer pht_not-an-operator",
      `Bearer ${host.token}`,
      "Bearer opt_forged",
    ])
      for (const method of ["POST", "GET"]) {
        const res = await call(
          method,
          `/operator/hosts/${host.name}/reconcile`,
          undefined,
          authorization ? { headers: { authorization } } : {},
        );
        expect(res.status, `${method} with ${authorization}`).toBe(401);
      }
  });

  it("400 for bad arguments, 404 for an unknown host, 503 naming a host whose agent is away", async () => {
    const host = await insertHost();
    const a = await auth();
    for (const query of ["dry_run=yes", "grace_s=-1", "grace_s=1e3", "grace_s=86401", "grace_s="]) {
      const res = await call("POST", `/operator/hosts/${host.name}/reconcile?${query}`, undefined, a);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatch(/^(dry_run|grace_s): /);
    }
    expect((await call("POST", "/operator/hosts/no-such-host/reconcile", undefined, a)).status).toBe(404);
    expect((await call("GET", "/operator/hosts/no-such-host/reconcile", undefined, a)).status).toBe(404);
    const away = await call("POST", `/operator/hosts/${host.name}/reconcile`, undefined, a);
    expect(away.status).toBe(503);
    expect(away.body.error).toContain(host.name);
  });

  it("the hello starts a pass with the host's own pods and their services, nobody else's", async () => {
    const host = await insertHost();
    const other = await insertHost();
    const pod = await insertPod({ hostId: host.id });
    const gone = await insertPod({ hostId: host.id, status: "deleted" });
    const elsewhere = await insertPod({ hostId: other.id });
    const now = new Date().toISOString();
    await env.DB.prepare(
      `INSERT INTO pod_services (id, pod_id, service_type, status, port, password_encrypted, created_at, updated_at)
       VALUES (?, ?, 'redis', 'running', 6379, 'sealed', ?, ?)`,
    )
      .bind(newId("svc"), pod.id, now, now)
      .run();
    const { agent, helloPass } = await agentOf(host, [pod.name]);
    try {
      expect(helloPass.op).toBe("host.reconcile");
      const params = helloPass.params as { pods: unknown[]; graceMs: number; dryRun: boolean };
      expect(params).toEqual({
        pods: [{ id: pod.id, name: pod.name, services: ["redis"] }],
        graceMs: 10 * 60_000,
        dryRun: false,
      });
      expect(JSON.stringify(params)).not.toContain(gone.id);
      expect(JSON.stringify(params)).not.toContain(elsewhere.id);
      agent.ok(helloPass, noDrift);
      const a = await auth();
      const last = await until(async () => {
        const res = await call("GET", `/operator/hosts/${host.name}/reconcile`, undefined, a);
        return res.body.report?.trigger === "hello" ? res.body.report : null;
      }, "the hello's pass to be recorded");
      expect(last).toMatchObject({ host: host.name, dry_run: false, findings: [], missing: [] });
    } finally {
      agent.close();
    }
  });

  it("a pod without its container is marked error; R2 objects of no backup record go; --dry-run changes nothing", async () => {
    const host = await insertHost();
    const other = await insertHost();
    const pod = await insertPod({ hostId: host.id });
    const creating = await insertPod({ hostId: host.id, status: "creating" });
    const gone = await insertPod({ hostId: host.id, status: "deleted" });
    const elsewhere = await insertPod({ hostId: other.id });
    const backupId = newId("bk");
    const kept = await putObject(`backups/${pod.id}/${backupId}.tar.gz`);
    await env.DB.prepare(
      `INSERT INTO backups (id, pod_id, status, trigger, size, sha256, object_key, created_at, completed_at, verified_at)
       VALUES (?, ?, 'completed', 'manual', 13, ?, ?, ?, ?, ?)`,
    )
      .bind(backupId, pod.id, "a".repeat(64), kept, new Date().toISOString(), null, null)
      .run();
    const stray = await putObject(`backups/${pod.id}/${newId("bk")}.tar.gz`);
    const ofDeletedPod = await putObject(`backups/${gone.id}/${newId("bk")}.tar.gz`);
    const anotherHosts = await putObject(`backups/${elsewhere.id}/${newId("bk")}.tar.gz`);
    const { agent, helloPass } = await agentOf(host, [pod.name, creating.name]);
    agent.ok(helloPass, noDrift);
    const a = await auth();
    const hostFinding = {
      kind: "container",
      name: "e2e-ghost",
      pod: "ghost",
      action: "would_remove",
      detail: "container of pod ghost, which has no record on this host",
    };
    /** one operator pass, the fake host answering with `answer` */
    const pass = async (query: string, answer: (params: { dryRun: boolean }) => unknown) => {
      const reply = call("POST", `/operator/hosts/${host.name}/reconcile?${query}`, undefined, a);
      const sent: ControlCall = await agent.next("control:call");
      expect(sent.op).toBe("host.reconcile");
      agent.ok(sent, answer(sent.params as { dryRun: boolean }));
      return reply;
    };
    try {
      const dry = await pass("dry_run=true&grace_s=0", (p) => {
        expect(p).toMatchObject({ dryRun: true, graceMs: 0 });
        return { findings: [hostFinding], missing: [pod.name, creating.name] };
      });
      expect(dry.status, JSON.stringify(dry.body)).toBe(200);
      expect(dry.body.dry_run).toBe(true);
      expect(dry.body.missing).toEqual([
        { pod: pod.name, action: "would_mark_error" },
        { pod: creating.name, action: "left" },
      ]);
      const objects = (body: { findings: { kind: string; name: string; action: string }[] }) =>
        body.findings.filter((f) => f.kind === "backup_object").map((f) => [f.name, f.action]);
      expect(objects(dry.body).sort()).toEqual(
        [
          [ofDeletedPod, "would_remove"],
          [stray, "would_remove"],
        ].sort(),
      );
      expect(dry.body.findings).toContainEqual(hostFinding);
      expect((await podRecord(pod.id))?.status).toBe("running");
      for (const key of [kept, stray, ofDeletedPod, anotherHosts]) expect(await exists(key), key).toBe(true);

      const real = await pass("grace_s=0", (p) => {
        expect(p).toMatchObject({ dryRun: false, graceMs: 0 });
        return { findings: [{ ...hostFinding, action: "removed" }], missing: [pod.name] };
      });
      expect(real.status, JSON.stringify(real.body)).toBe(200);
      expect(real.body.missing).toEqual([{ pod: pod.name, action: "marked_error" }]);
      expect(objects(real.body).sort()).toEqual(
        [
          [ofDeletedPod, "removed"],
          [stray, "removed"],
        ].sort(),
      );
      expect((await podRecord(pod.id))?.status).toBe("error");
      expect(await podEventRecords(pod.id)).toContainEqual(
        expect.objectContaining({
          type: "error",
          message: "the reconciler found no container for the pod on its host",
        }),
      );
      expect(await exists(kept)).toBe(true);
      expect(await exists(anotherHosts)).toBe(true);
      expect(await exists(stray)).toBe(false);
      expect(await exists(ofDeletedPod)).toBe(false);
      const last = await call("GET", `/operator/hosts/${host.id}/reconcile`, undefined, a);
      expect(last.body.report).toMatchObject({ trigger: "operator", dry_run: false });

      // with the default grace period a fresh orphan is only named
      await putObject(stray);
      const young = await pass("", () => noDrift);
      expect(objects(young.body)).toEqual([[stray, "young"]]);
      expect(await exists(stray)).toBe(true);
    } finally {
      agent.close();
    }
  });
});
