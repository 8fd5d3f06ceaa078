import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { FakeAgent, insertHost, insertPod, podEventRecords, type TestHost, until } from "./support/agent";
import { call, registerUser } from "./support/client";
import { operatorToken } from "./support/operator";

/**
 * The operator API that empties a host (worker/routes/operator-hosts.ts, docs/operations.md): who may
 * call it, what it refuses, and what `lost` does with pods with and without a verified backup. The
 * moves themselves, on real hosts: test/e2e/host-moves.test.ts.
 */

/** A backup row as a completed, test-restored one leaves it (the object is not needed here). */
async function insertVerifiedBackup(podId: string, createdAt: string) {
  const id = newId("bk");
  await env.DB.prepare(
    `INSERT INTO backups (id, pod_id, status, trigger, size, sha256, object_key, created_at, completed_at, verified_at)
     VALUES (?, ?, 'completed', 'manual', 100, ?, ?, ?, ?, ?)`,
  )
    .bind(id, podId, "a".repeat(64), `backups/${podId}/${id}.tar.gz`, createdAt, createdAt, createdAt)
    .run();
  return id;
}

const movesOf = async (hostId: string) =>
  (
    await env.DB.prepare(
      "SELECT pod_name, status, backup_at, reason FROM pod_moves WHERE from_host_id = ? ORDER BY created_at, id",
    )
      .bind(hostId)
      .all<{ pod_name: string; status: string; backup_at: string | null; reason: string | null }>()
  ).results;

const drained = async (hostId: string) =>
  (await env.DB.prepare("SELECT drained FROM hosts WHERE id = ?").bind(hostId).first<{ drained: number }>())
    ?.drained;

describe("operator API: emptying a host", () => {
  it("refuses every caller without a live operator token: none, a user's, a host's, forged, expired", async () => {
    const host = await insertHost();
    const expired = await operatorToken(-1_000);
    for (const auth of [
      undefined,
      "Bearer pht_not-an-operator",
      `Bearer ${host.token}`,
      "Bearer opt_forged",
      `Bearer ${expired}`,
    ]) {
      for (const [method, path] of [
        ["POST", `/operator/hosts/${host.name}/evacuate`],
        ["POST", `/operator/hosts/${host.name}/lost`],
        ["GET", `/operator/hosts/${host.name}/moves`],
      ] as const) {
        const res = await call(method, path, undefined, auth ? { headers: { authorization: auth } } : {});
        expect(res.status, `${method} ${path} with ${auth}`).toBe(401);
        expect(res.body.error).toMatch(/operator token/);
      }
    }
    expect(await drained(host.id)).toBe(0);
  });

  it("404 for an unknown host; an offline host cannot be evacuated, a connected one cannot be declared lost", async () => {
    const token = await operatorToken();
    const auth = { headers: { authorization: `Bearer ${token}` } };
    expect((await call("POST", "/operator/hosts/no-such-host/evacuate", undefined, auth)).status).toBe(404);
    expect((await call("GET", "/operator/hosts/no-such-host/moves", undefined, auth)).status).toBe(404);

    const offline = await insertHost();
    const evacuate = await call("POST", `/operator/hosts/${offline.name}/evacuate`, undefined, auth);
    expect(evacuate.status).toBe(503);
    expect(evacuate.body.error).toBe(
      `server ${offline.name} is offline: evacuating copies its pods from it; if it is gone for good, declare it lost`,
    );

    const online: TestHost = await insertHost();
    const { agent } = await FakeAgent.online(online);
    try {
      const lost = await call("POST", `/operator/hosts/${online.id}/lost`, undefined, auth);
      expect(lost.status).toBe(409);
      expect(lost.body.error).toBe(
        `server ${online.name} is connected: evacuate it instead of declaring it lost`,
      );
      expect(await drained(online.id)).toBe(0);
    } finally {
      agent.close();
    }
  });

  it("lost: a pod without a verified backup is skipped and told; one with a backup is moved, or ends with why not", async () => {
    const token = await operatorToken();
    const auth = { headers: { authorization: `Bearer ${token}` } };
    // its own region: no other host there, so the recreation has nowhere to go and must say so
    const region = "ap-south";
    const host = await insertHost(region);
    await env.DB.prepare("UPDATE hosts SET region = ? WHERE id = ?").bind(region, host.id).run();
    const backed = await insertPod({ hostId: host.id, status: "running" });
    const bare = await insertPod({ hostId: host.id, status: "running" });
    await env.DB.prepare("UPDATE pods SET region = ? WHERE host_id = ?").bind(region, host.id).run();
    const at = "2026-11-27T03:00:00.000Z";
    await insertVerifiedBackup(backed.id, "2026-11-26T03:00:00.000Z");
    await insertVerifiedBackup(backed.id, at);

    const res = await call("POST", `/operator/hosts/${host.name}/lost`, undefined, auth);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.host).toBe(host.name);
    const byPod = Object.fromEntries(
      (res.body.moves as { pod: string; status: string; backup_at: string | null }[]).map((m) => [m.pod, m]),
    );
    expect(byPod[backed.name]).toMatchObject({ kind: "lost", backup_at: at });
    expect(byPod[bare.name]).toMatchObject({
      status: "skipped",
      backup_at: null,
      reason: "no verified backup: the pod cannot be recreated",
    });
    expect(await drained(host.id)).toBe(1);
    expect(JSON.stringify(await podEventRecords(bare.id))).toContain(
      `server ${host.name} was declared lost and pod ${bare.name} has no verified backup: it was not recreated`,
    );

    // the workflow runs the move and ends it: no other host of the region, so an error naming why
    const ended = await until(
      async () => (await movesOf(host.id)).find((m) => m.pod_name === backed.name && m.status === "error"),
      "the move to end",
      20_000,
    );
    expect(ended.reason).toBe(`no other server of region ${region} has room for a launch pod`);
    expect(JSON.stringify(await podEventRecords(backed.id))).toContain("the move failed: no other server");
    const listed = await call("GET", `/operator/hosts/${host.name}/moves`, undefined, auth);
    expect(listed.status).toBe(200);
    expect((listed.body.moves as { pod: string }[]).map((m) => m.pod).sort()).toEqual(
      [backed.name, bare.name].sort(),
    );
    // the pod stays where it was, its record untouched
    const pod = await env.DB.prepare("SELECT host_id FROM pods WHERE id = ?")
      .bind(backed.id)
      .first<{ host_id: string }>();
    expect(pod?.host_id).toBe(host.id);

    // a second declaration queues nothing twice: the skipped pod again, the other's move is over
    const again = await call("POST", `/operator/hosts/${host.name}/lost`, undefined, auth);
    expect(again.status).toBe(202);
  });

  it("lost: the owner deletes a pod left there without asking the gone host; a pod of a host only offline still waits for it", async () => {
    const token = await operatorToken();
    const auth = { headers: { authorization: `Bearer ${token}` } };
    const host = await insertHost("sa-east");
    const owner = await registerUser();
    const left = await insertPod({ hostId: host.id, status: "running", teamId: owner.user.active_team_id });
    expect((await call("POST", `/operator/hosts/${host.name}/lost`, undefined, auth)).status).toBe(202);
    const res = await call("DELETE", `/api/pods/${left.name}`, undefined, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const row = await env.DB.prepare("SELECT status FROM pods WHERE id = ?")
      .bind(left.id)
      .first<{ status: string }>();
    expect(row?.status).toBe("deleted");

    // offline but never declared lost: the host is asked first, so the delete waits for it (503)
    const away = await insertHost();
    const kept = await insertPod({ hostId: away.id, status: "running", teamId: owner.user.active_team_id });
    const refused = await call("DELETE", `/api/pods/${kept.name}`, undefined, { token: owner.token });
    expect(refused.status).toBe(503);
    const still = await env.DB.prepare("SELECT status FROM pods WHERE id = ?")
      .bind(kept.id)
      .first<{ status: string }>();
    expect(still?.status).toBe("running");
  });

  it("moves a host's pods one at a time, in the order they were made (not by their random ids)", async () => {
    const token = await operatorToken();
    const auth = { headers: { authorization: `Bearer ${token}` } };
    const region = "sa-east";
    const host = await insertHost(region);
    await env.DB.prepare("UPDATE hosts SET region = ? WHERE id = ?").bind(region, host.id).run();
    const made: string[] = [];
    for (const day of ["2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"]) {
      const pod = await insertPod({ hostId: host.id, status: "running" });
      await env.DB.prepare("UPDATE pods SET region = ?, created_at = ? WHERE id = ?")
        .bind(region, `${day}T00:00:00.000Z`, pod.id)
        .run();
      await insertVerifiedBackup(pod.id, `${day}T03:00:00.000Z`);
      made.push(pod.name);
    }
    expect((await call("POST", `/operator/hosts/${host.name}/lost`, undefined, auth)).status).toBe(202);
    // each move ends (no room in the region) before the next starts: their ends are in move order
    const ended = await until(
      async () => {
        const rows = (
          await env.DB.prepare(
            "SELECT pod_name, status FROM pod_moves WHERE from_host_id = ? ORDER BY ended_at, rowid",
          )
            .bind(host.id)
            .all<{ pod_name: string; status: string }>()
        ).results;
        return rows.every((r) => r.status === "error") ? rows : undefined;
      },
      "every move to end",
      30_000,
    );
    expect(ended.map((r) => r.pod_name)).toEqual(made);
  });
});
