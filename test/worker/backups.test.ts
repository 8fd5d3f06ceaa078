import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { fail } from "../../shared/errors";
import { newId } from "../../shared/ids";
import { createDb } from "../../worker/db/client";
import { FAIR_SHARE_LIMITS } from "../../worker/http/rate-limit";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { runDueSchedules } from "../../worker/services/backups/schedule";
import { BACKUP_DEADLINE_MS } from "../../worker/services/backups/sweep";
import { putStream } from "../../worker/services/blobs/stream-put";
import {
  type ControlCall,
  FakeAgent,
  getBackupArchive,
  hostFetch,
  insertHost,
  insertPod,
  podEventRecords,
  putBackupArchive,
  type TestHost,
  until,
} from "./support/agent";
import { call, freshIp, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Backups (docs/backups.md) against the real Worker in workerd: D1, R2, the HostAgent object, the
 * pod-backup and pod-restore Workflows, and the fake agent over the real WebSocket answering
 * `backup.*` and, like a real agent, sending and reading the archive on the byte routes.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
type Setup = { host: TestHost; agent: FakeAgent; as: As; pod: { id: string; name: string } };

const hex = (buffer: ArrayBuffer) =>
  [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
const sha256 = async (bytes: Uint8Array) => hex(await crypto.subtle.digest("SHA-256", bytes));

/** A small real .tar.gz-shaped archive (gzip of some bytes), different each time. */
async function archive(text = `podhost-backup ${crypto.randomUUID()}`.repeat(50)): Promise<Uint8Array> {
  const gz = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(gz).arrayBuffer());
}

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 5_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

const facts = async (bytes: Uint8Array) => ({
  ok: true,
  bytes: bytes.byteLength,
  sha256: await sha256(bytes),
  files: 3,
  databases: [],
});

const backupOf = (as: As, pod: string, id: string) =>
  call("GET", `/api/pods/${pod}/backups/${id}`, undefined, as);

async function settled(as: As, pod: string, id: string) {
  return until(
    async () => {
      const res = await backupOf(as, pod, id);
      return res.body.status !== "in_progress" ? res.body : undefined;
    },
    `backup ${id} to end`,
    10_000,
  );
}

const objectKey = async (id: string) =>
  (
    await env.DB.prepare("SELECT object_key FROM backups WHERE id = ?")
      .bind(id)
      .first<{ object_key: string }>()
  )?.object_key;

/** Plays the host through `backup.verify`: reads the archive back and checks it like a real agent. */
async function answerVerify(s: Setup, verdict: "pass" | string = "pass") {
  const v = await nextCall(s.agent, "backup.verify");
  const { backupId, bytes, sha256: want } = v.params as { backupId: string; bytes: number; sha256: string };
  const read = await getBackupArchive(s.host, backupId);
  expect(read.status).toBe(200);
  expect(read.headers.get("content-length")).toBe(String(bytes));
  expect(read.bytes.byteLength).toBe(bytes);
  expect(await sha256(read.bytes)).toBe(want);
  if (verdict === "pass") s.agent.ok(v, await facts(read.bytes));
  else s.agent.ok(v, { ok: false, reason: verdict });
  return v;
}

/** A manual backup made, uploaded and verified; returns the completed record and its bytes. */
async function backUp(s: Setup, note?: string) {
  const res = await call("POST", `/api/pods/${s.pod.name}/backups`, note ? { note } : undefined, s.as);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const c = await nextCall(s.agent, "backup.create");
  const bytes = await archive();
  expect((await putBackupArchive(s.host, res.body.id, bytes)).status).toBe(201);
  s.agent.ok(c, await facts(bytes));
  await answerVerify(s);
  const done = await settled(s.as, s.pod.name, res.body.id);
  return { backup: done, bytes };
}

/** A running pod on a connected host, on `plan`. */
async function setup(plan = "launch", preset = "static"): Promise<Setup> {
  const s = await onlineWithPod(preset);
  if (plan !== "launch")
    await env.DB.prepare("UPDATE pods SET plan_slug = ? WHERE id = ?").bind(plan, s.pod.id).run();
  return s;
}

/** A completed backup written straight into D1 and R2 (for retention, restore and download checks). */
async function insertCompleted(podId: string, createdAt: string, bytes?: Uint8Array) {
  const id = newId("bk");
  const body = bytes ?? (await archive());
  const key = `backups/${podId}/${id}.tar.gz`;
  await env.BLOBS.put(key, body);
  const hash = await sha256(body);
  await env.DB.prepare(
    `INSERT INTO backups (id, pod_id, note, status, trigger, size, sha256, object_key, uploaded_bytes, uploaded_sha256,
       verified_at, created_at, completed_at) VALUES (?, ?, NULL, 'completed', 'manual', ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
    .bind(id, podId, body.byteLength, hash, key, body.byteLength, hash, createdAt, createdAt, createdAt)
    .run();
  return { id, key, bytes: body };
}

describe("create, list, get, download, delete", () => {
  it("a backup ends completed with its size, hash and test-restore; listed with the plan's limit; downloaded byte for byte; deleted with its object", async () => {
    const s = await setup("build", "nodejs");
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, { note: "before upgrade" }, s.as);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^bk_/),
      pod_name: s.pod.name,
      note: "before upgrade",
      status: "in_progress",
      trigger: "manual",
      size: null,
      sha256: null,
      verified_at: null,
      completed_at: null,
    });
    expect(res.body.error).toBeUndefined();

    const c = await nextCall(s.agent, "backup.create");
    expect(c.params).toEqual({
      name: s.pod.name,
      backupId: res.body.id,
      preset: "nodejs",
      whenStopped: "helper",
    });
    const bytes = await archive();
    const put = await putBackupArchive(s.host, res.body.id, bytes);
    expect(put.status).toBe(201);
    expect(await put.json()).toEqual({ bytes: bytes.byteLength, sha256: await sha256(bytes) });
    s.agent.ok(c, await facts(bytes));
    const v = await answerVerify(s);
    expect(v.params).toEqual({ backupId: res.body.id, bytes: bytes.byteLength, sha256: await sha256(bytes) });

    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done).toMatchObject({
      status: "completed",
      size: bytes.byteLength,
      sha256: await sha256(bytes),
      verify_error: null,
    });
    expect(done.verified_at).toEqual(expect.any(String));
    expect(done.completed_at).toEqual(expect.any(String));

    const list = await call("GET", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ backups: [done], limit: 5, count: 1 });

    const dl = await exports.default.fetch(
      new Request(`http://localhost/api/pods/${s.pod.name}/backups/${done.id}/download`, {
        headers: { authorization: `Bearer ${s.as.token}`, "cf-connecting-ip": freshIp() },
      }),
    );
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-type")).toBe("application/gzip");
    expect(dl.headers.get("content-length")).toBe(String(bytes.byteLength));
    expect(dl.headers.get("content-disposition")).toContain(`${s.pod.name}-${done.id}.tar.gz`);
    expect(new Uint8Array(await dl.arrayBuffer())).toEqual(bytes);

    const key = await objectKey(done.id);
    expect(key).toBeDefined();
    const del = await call("DELETE", `/api/pods/${s.pod.name}/backups/${done.id}`, undefined, s.as);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ status: "deleted" });
    expect(await env.BLOBS.head(key as string)).toBeNull();
    expect((await backupOf(s.as, s.pod.name, done.id)).status).toBe(404);
    expect((await call("DELETE", `/api/pods/${s.pod.name}/backups/${done.id}`, undefined, s.as)).status).toBe(
      404,
    );
  });

  it("403 at the plan's limit (launch keeps 1); 400 for a bad note or a pod neither running nor stopped; 409 while one runs", async () => {
    const s = await setup();
    const first = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(first.status).toBe(202);
    // one in progress counts against the limit already
    const second = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(second.status).toBe(403);
    expect(second.body.error).toContain("limit");
    const c = await nextCall(s.agent, "backup.create");
    const bytes = await archive();
    await putBackupArchive(s.host, first.body.id, bytes);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s);
    expect((await settled(s.as, s.pod.name, first.body.id)).status).toBe("completed");
    expect((await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as)).status).toBe(403);

    const t = await setup("build");
    const long = await call("POST", `/api/pods/${t.pod.name}/backups`, { note: "x".repeat(501) }, t.as);
    expect(long.status).toBe(400);
    expect(long.body.error).toContain("note");
    expect((await call("POST", `/api/pods/${t.pod.name}/backups`, { other: 1 }, t.as)).status).toBe(400);
    const running1 = await call("POST", `/api/pods/${t.pod.name}/backups`, undefined, t.as);
    expect(running1.status).toBe(202);
    const busy = await call("POST", `/api/pods/${t.pod.name}/backups`, undefined, t.as);
    expect(busy.status).toBe(409);
    await nextCall(t.agent, "backup.create");

    const u = await setup("build");
    for (const status of ["suspended", "error", "creating"]) {
      await env.DB.prepare("UPDATE pods SET status = ? WHERE id = ?").bind(status, u.pod.id).run();
      const refused = await call("POST", `/api/pods/${u.pod.name}/backups`, undefined, u.as);
      expect(refused.status, status).toBe(400);
      expect(refused.body.error).toContain(`is ${status}`);
    }
  });

  it("a stopped pod's manual backup is made by its host in helpers (whenStopped: helper) and completes", async () => {
    const s = await setup("build");
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(s.pod.id).run();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, { note: "while stopped" }, s.as);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const c = await nextCall(s.agent, "backup.create");
    expect(c.params).toEqual({
      name: s.pod.name,
      backupId: res.body.id,
      preset: "static",
      whenStopped: "helper",
    });
    const bytes = await archive();
    expect((await putBackupArchive(s.host, res.body.id, bytes)).status).toBe(201);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s);
    expect(await settled(s.as, s.pod.name, res.body.id)).toMatchObject({
      status: "completed",
      trigger: "manual",
      note: "while stopped",
    });
  });

  it("an archive whose stored size differs from the host's claim ends failed, with no object", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    const bytes = await archive();
    await putBackupArchive(s.host, res.body.id, bytes.subarray(0, bytes.byteLength - 5));
    s.agent.ok(c, await facts(bytes));
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done.status).toBe("failed");
    expect(done.error).toContain("size mismatch");
    expect(done.verified_at).toBeNull();
    expect(await env.BLOBS.head((await objectKey(res.body.id)) as string)).toBeNull();
    await s.agent.expectNone("control:call");
    // failed backups hold nothing and do not count
    const list = await call("GET", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(list.body).toMatchObject({ limit: 1, count: 0 });
  });

  it("the host failing (or never uploading) ends the backup failed with its reason", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    s.agent.ok(c, { ok: false, reason: "database dump of postgresql is empty" });
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done).toMatchObject({ status: "failed", error: "database dump of postgresql is empty" });

    const res2 = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c2 = await nextCall(s.agent, "backup.create");
    s.agent.ok(c2, await facts(await archive())); // claims an archive it never sent
    const done2 = await settled(s.as, s.pod.name, res2.body.id);
    expect(done2.status).toBe("failed");
    expect(done2.error).toContain("none was uploaded");
  });

  it("a failed test-restore ends the backup failed with verify_error, the object deleted", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    const bytes = await archive();
    await putBackupArchive(s.host, res.body.id, bytes);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s, "mysql dump did not load: syntax error at line 3");
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done).toMatchObject({
      status: "failed",
      verified_at: null,
      verify_error: "mysql dump did not load: syntax error at line 3",
    });
    expect(done.error).toContain("test-restore failed");
    expect(await env.BLOBS.head((await objectKey(res.body.id)) as string)).toBeNull();
  });
});

describe("a host that lost the control plane mid-step", () => {
  it("backup.create and backup.verify whose own calls to the control plane broke off are run again under a new key, and the backup completes", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // the archive's upload broke off as the Worker restarted: the host says so (component)
    const c1 = await nextCall(s.agent, "backup.create");
    s.agent.fail(
      c1,
      "unavailable",
      "backup.create: the control plane could not be reached (socket hang up)",
      "control_plane",
    );
    const c2 = await nextCall(s.agent, "backup.create", 15_000);
    expect(c2.params).toEqual(c1.params);
    expect(c2.idempotencyKey).not.toBe(c1.idempotencyKey);
    const bytes = await archive();
    expect((await putBackupArchive(s.host, res.body.id, bytes)).status).toBe(201);
    s.agent.ok(c2, await facts(bytes));
    // the test-restore could not read the archive back (connection refused): run again too
    const v1 = await nextCall(s.agent, "backup.verify");
    s.agent.fail(
      v1,
      "unavailable",
      "backup.verify: the control plane could not be reached (connect ECONNREFUSED 127.0.0.1:8787)",
      "control_plane",
    );
    const v2 = await answerVerify(s);
    expect(v2.idempotencyKey).not.toBe(v1.idempotencyKey);
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done.status).toBe("completed");
    expect(done.error).toBeUndefined();
    expect(done.verified_at).toBeTruthy();
  }, 60_000);

  it("a failure of the engine or the pod is not run again: the backup fails with the host's reason", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    s.agent.fail(
      c,
      "unavailable",
      "backup.create: docker engine unavailable (connect ENOENT /run/docker.sock)",
      "engine",
    );
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done.status).toBe("failed");
    expect(done.error).toContain("docker engine unavailable");
    await s.agent.expectNone("control:call", 500);
  });
});

describe("fair use", () => {
  it(`at most ${FAIR_SHARE_LIMITS.backup.perPod} backups, imports and restores per pod an hour through the API (429 with Retry-After)`, async () => {
    const s = await setup("turbo");
    for (let i = 0; i < FAIR_SHARE_LIMITS.backup.perPod; i++) {
      const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
      expect(res.status).not.toBe(429);
    }
    const refused = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    // reading is not counted
    expect((await call("GET", `/api/pods/${s.pod.name}/backups`, undefined, s.as)).status).toBe(200);
  });
});

describe("download checks", () => {
  const download = (s: Setup, id: string) =>
    exports.default.fetch(
      new Request(`http://localhost/api/pods/${s.pod.name}/backups/${id}/download`, {
        headers: { authorization: `Bearer ${s.as.token}`, "cf-connecting-ip": freshIp() },
      }),
    );

  it("an object changed in storage (same size): the transfer breaks off and the backup is failed", async () => {
    const s = await setup();
    const { backup, bytes } = await backUp(s);
    const tampered = bytes.slice();
    tampered[tampered.length - 1] = (tampered.at(-1) ?? 0) ^ 0xff;
    await env.BLOBS.put((await objectKey(backup.id)) as string, tampered);
    const res = await download(s, backup.id);
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    const after = await until(async () => {
      const b = (await backupOf(s.as, s.pod.name, backup.id)).body;
      return b.status === "failed" ? b : undefined;
    }, "the backup to be marked failed");
    expect(after.error).toContain("corrupted in storage");
  });

  it("an object of another size: 409 saying so before a byte is sent, the backup failed; 409 for a backup not completed", async () => {
    const s = await setup();
    const { backup } = await backUp(s);
    await env.BLOBS.put((await objectKey(backup.id)) as string, await archive("short"));
    const res = await download(s, backup.id);
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toContain("corrupted in storage");
    expect((await backupOf(s.as, s.pod.name, backup.id)).body.status).toBe("failed");
    expect((await download(s, backup.id)).status).toBe(409);
  });
});

describe("import", () => {
  const form = (file: Blob, note?: string, filename = "site.tar.gz") => {
    const f = new FormData();
    if (note) f.append("note", note);
    f.append("file", file, filename);
    return f;
  };
  const post = (s: Setup, body: FormData | string, headers: Record<string, string> = {}) =>
    exports.default.fetch(
      new Request(`http://localhost/api/pods/${s.pod.name}/backups/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.as.token}`, "cf-connecting-ip": freshIp(), ...headers },
        body,
      }),
    );

  it("a .tar.gz is stored, test-restored on the host, then completed with its size and hash", async () => {
    const s = await setup("build");
    const bytes = await archive();
    const res = await post(s, form(new Blob([bytes]), "from laptop"));
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).toBe(202);
    expect(body).toMatchObject({ status: "in_progress", trigger: "import", note: "from laptop" });
    const v = await answerVerify(s);
    expect(v.params).toEqual({ backupId: body.id, bytes: bytes.byteLength, sha256: await sha256(bytes) });
    const done = await settled(s.as, s.pod.name, body.id as string);
    expect(done).toMatchObject({ status: "completed", size: bytes.byteLength, sha256: await sha256(bytes) });
    // the host cannot overwrite an import's bytes
    expect((await putBackupArchive(s.host, body.id as string, await archive())).status).toBe(404);
  });

  it("not gzip → 400 and nothing kept; over 2 GB declared → 413; at the limit → 403; a failed test-restore → failed, object deleted", async () => {
    const s = await setup();
    const bad = await post(s, form(new Blob(["PK\u0003\u0004 a zip, not a tarball"])));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("not a .tar.gz");
    const empty = await post(s, form(new Blob([])));
    expect(empty.status).toBe(400);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM backups WHERE pod_id = ?")
      .bind(s.pod.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
    const listed = await env.BLOBS.list({ prefix: `backups/${s.pod.id}/` });
    expect(listed.objects).toEqual([]);

    const huge = await post(s, "x", {
      "content-type": "multipart/form-data; boundary=b",
      "content-length": String(2 * 1024 ** 3 + 1024 * 1024),
    });
    expect(huge.status).toBe(413);

    const res = await post(s, form(new Blob([await archive()])));
    const body = (await res.json()) as { id: string };
    expect(res.status).toBe(202);
    const atLimit = await post(s, form(new Blob([await archive()])));
    expect(atLimit.status).toBe(403);
    await answerVerify(s, "archive lists no podhost-backup.json");
    const done = await settled(s.as, s.pod.name, body.id);
    expect(done).toMatchObject({ status: "failed", verify_error: "archive lists no podhost-backup.json" });
    expect(await env.BLOBS.head((await objectKey(body.id)) as string)).toBeNull();
  });
});

describe("restore", () => {
  it("202 restoring; the host gets backup.restore with the record's size and hash; restore_started then restore_completed", async () => {
    const s = await setup("build", "nodejs");
    const { backup, bytes } = await backUp(s);
    const res = await call("POST", `/api/pods/${s.pod.name}/backups/${backup.id}/restore`, undefined, s.as);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: "restoring", backup_id: backup.id });
    const busy = await call("POST", `/api/pods/${s.pod.name}/backups/${backup.id}/restore`, undefined, s.as);
    expect(busy.status).toBe(409);
    expect((await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as)).status).toBe(409);
    expect(
      (await call("DELETE", `/api/pods/${s.pod.name}/backups/${backup.id}`, undefined, s.as)).status,
    ).toBe(409);

    const r = await nextCall(s.agent, "backup.restore");
    expect(r.params).toEqual({
      name: s.pod.name,
      preset: "nodejs",
      backupId: backup.id,
      bytes: bytes.byteLength,
      sha256: await sha256(bytes),
    });
    expect((await getBackupArchive(s.host, backup.id)).bytes).toEqual(bytes);
    s.agent.ok(r, {
      ok: true,
      databases: [{ kind: "sqlite", file: "databases/app.db", bytes: 10, source: "data/app.db" }],
      dependencies_dropped: ["node_modules"],
    });
    const events = await until(async () => {
      const e = await podEventRecords(s.pod.id);
      return e.some((x) => x.type === "restore_completed") ? e : undefined;
    }, "restore_completed");
    const types = events.map((e) => e.type);
    expect(types.indexOf("restore_started")).toBeLessThan(types.indexOf("restore_completed"));
    const completed = events.find((e) => e.type === "restore_completed");
    expect(completed?.message).toContain("reload the pod");
    expect(JSON.parse(completed?.metadata ?? "{}")).toMatchObject({
      backup_id: backup.id,
      dependencies_dropped: ["node_modules"],
    });
    // the lock is released
    await until(
      async () =>
        (await call("POST", `/api/pods/${s.pod.name}/backups/${backup.id}/restore`, undefined, s.as))
          .status === 202,
      "a second restore to be accepted",
    );
    await nextCall(s.agent, "backup.restore");
  });

  it("a failed restore names the dump left in the pod; only completed backups of running or stopped pods restore", async () => {
    const s = await setup();
    const { backup } = await backUp(s);
    const res = await call("POST", `/api/pods/${s.pod.name}/backups/${backup.id}/restore`, undefined, s.as);
    expect(res.status).toBe(202);
    const r = await nextCall(s.agent, "backup.restore");
    s.agent.ok(r, {
      ok: false,
      reason: "postgresql: psql exited 3",
      dump_path: "/tmp/podhost-restore/postgresql.sql",
      files_restored: true,
    });
    const failed = await until(async () => {
      const e = await podEventRecords(s.pod.id);
      return e.find((x) => x.type === "restore_failed");
    }, "restore_failed");
    expect(failed.message).toContain("/tmp/podhost-restore/postgresql.sql");
    expect(failed.message).toContain("psql exited 3");
    expect(JSON.parse(failed.metadata ?? "{}")).toMatchObject({
      dump_path: "/tmp/podhost-restore/postgresql.sql",
      files_restored: true,
    });

    const t = await setup("build");
    const res2 = await call("POST", `/api/pods/${t.pod.name}/backups`, undefined, t.as);
    const notDone = await call(
      "POST",
      `/api/pods/${t.pod.name}/backups/${res2.body.id}/restore`,
      undefined,
      t.as,
    );
    expect(notDone.status).toBe(409);
    await nextCall(t.agent, "backup.create");
    const old = await insertCompleted(t.pod.id, new Date(Date.now() - 60_000).toISOString());
    await env.DB.prepare("UPDATE pods SET status = 'suspended' WHERE id = ?").bind(t.pod.id).run();
    const suspended = await call(
      "POST",
      `/api/pods/${t.pod.name}/backups/${old.id}/restore`,
      undefined,
      t.as,
    );
    expect(suspended.status).toBe(400);
    expect(suspended.body.error).toContain("is suspended");
  });

  it("a stopped pod is restored by its host (backup.restore as for a running one) and stays stopped", async () => {
    const s = await setup("build");
    const old = await insertCompleted(s.pod.id, new Date(Date.now() - 60_000).toISOString());
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(s.pod.id).run();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups/${old.id}/restore`, undefined, s.as);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const r = await nextCall(s.agent, "backup.restore");
    expect(r.params).toMatchObject({ name: s.pod.name, backupId: old.id, bytes: old.bytes.byteLength });
    s.agent.ok(r, { ok: true, databases: [], dependencies_dropped: [] });
    await until(async () => {
      const e = await podEventRecords(s.pod.id);
      return e.some((x) => x.type === "restore_completed") ? e : undefined;
    }, "restore_completed");
    const pod = await env.DB.prepare("SELECT status FROM pods WHERE id = ?")
      .bind(s.pod.id)
      .first<{ status: string }>();
    expect(pod?.status).toBe("stopped");
  });
});

describe("schedule", () => {
  it("defaults to enabled, daily, the plan's retention; PUT changes any field; retention above the plan is 400", async () => {
    const s = await setup("grow");
    const got = await call("GET", `/api/pods/${s.pod.name}/backups/schedule`, undefined, s.as);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ enabled: true, frequency: "daily", retention: 10 });
    const put = await call("PUT", `/api/pods/${s.pod.name}/backups/schedule`, { frequency: "weekly" }, s.as);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ enabled: true, frequency: "weekly", retention: 10 });
    const put2 = await call(
      "PUT",
      `/api/pods/${s.pod.name}/backups/schedule`,
      { retention: 3, enabled: false },
      s.as,
    );
    expect(put2.body).toMatchObject({ enabled: false, frequency: "weekly", retention: 3, next_run_at: null });
    const again = await call("GET", `/api/pods/${s.pod.name}/backups/schedule`, undefined, s.as);
    expect(again.body).toEqual(put2.body);
    for (const body of [
      { retention: 11 },
      { retention: 0 },
      { frequency: "hourly" },
      { enabled: "yes" },
      { x: 1 },
    ]) {
      const res = await call("PUT", `/api/pods/${s.pod.name}/backups/schedule`, body, s.as);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const above = await call("PUT", `/api/pods/${s.pod.name}/backups/schedule`, { retention: 11 }, s.as);
    expect(above.body.error).toContain("retention");
  });
});

describe("the cron", () => {
  const due = (podId: string, retention: number | null = null) =>
    env.DB.prepare(
      `INSERT INTO backup_schedules (pod_id, enabled, frequency, retention, next_run_at, created_at, updated_at)
       VALUES (?, 1, 'daily', ?, ?, ?, ?)`,
    )
      .bind(
        podId,
        retention,
        new Date(Date.now() - 60_000).toISOString(),
        new Date().toISOString(),
        new Date().toISOString(),
      )
      .run();
  const nextRun = async (podId: string) =>
    (
      await env.DB.prepare("SELECT next_run_at FROM backup_schedules WHERE pod_id = ?")
        .bind(podId)
        .first<{ next_run_at: string }>()
    )?.next_run_at;
  const count = async (podId: string) =>
    (
      await env.DB.prepare("SELECT count(*) AS n FROM backups WHERE pod_id = ?")
        .bind(podId)
        .first<{ n: number }>()
    )?.n;

  it("a due running pod gets a scheduled backup, verified, and the oldest beyond retention are deleted", async () => {
    const s = await setup("build");
    const oldest = await insertCompleted(s.pod.id, new Date(Date.now() - 3 * 86_400_000).toISOString());
    const middle = await insertCompleted(s.pod.id, new Date(Date.now() - 2 * 86_400_000).toISOString());
    await due(s.pod.id, 2);
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "backup-schedules"),
    );
    const c = await nextCall(s.agent, "backup.create");
    // a pod stopped between the schedule and its host is refused there, not backed up in helpers
    expect(c.params).toMatchObject({ whenStopped: "refuse" });
    const id = (c.params as { backupId: string }).backupId;
    const list0 = await call("GET", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    expect(list0.body.backups[0]).toMatchObject({ id, trigger: "scheduled", status: "in_progress" });
    const bytes = await archive();
    await putBackupArchive(s.host, id, bytes);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s);
    await settled(s.as, s.pod.name, id);
    const list = await until(async () => {
      const l = await call("GET", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
      return l.body.backups.length === 2 ? l : undefined;
    }, "retention to prune");
    expect(list.body.backups.map((b: { id: string }) => b.id)).toEqual([id, middle.id]);
    expect(await env.BLOBS.head(oldest.key)).toBeNull();
    expect(await env.BLOBS.head(middle.key)).not.toBeNull();
    expect(Date.parse((await nextRun(s.pod.id)) as string)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
  });

  it("a stopped pod is skipped (its backups neither added nor deleted), its next run moved on; due pods are taken a page at a time", async () => {
    const host = await insertHost();
    const pods = [];
    for (let i = 0; i < 5; i++) {
      const pod = await insertPod({ hostId: host.id, status: "stopped" });
      await env.DB.prepare("UPDATE pods SET plan_slug = 'build' WHERE id = ?").bind(pod.id).run();
      await insertCompleted(pod.id, new Date(Date.now() - 86_400_000).toISOString());
      await insertCompleted(pod.id, new Date(Date.now() - 2 * 86_400_000).toISOString());
      await due(pod.id, 1);
      pods.push(pod);
    }
    // pages of 2: five due pods take three pages
    const taken = await runDueSchedules(env, createDb(env.DB), Date.now(), { pageSize: 2 });
    expect(taken.skipped).toBeGreaterThanOrEqual(5);
    for (const pod of pods) {
      expect(await count(pod.id)).toBe(2);
      expect(Date.parse((await nextRun(pod.id)) as string)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    }
  });

  it("a pod without a schedule is due a day after it was created; a disabled schedule never", async () => {
    const host = await insertHost();
    const fresh = await insertPod({ hostId: host.id, status: "stopped" });
    const old = await insertPod({ hostId: host.id, status: "stopped" });
    const off = await insertPod({ hostId: host.id, status: "stopped" });
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await env.DB.prepare("UPDATE pods SET created_at = ? WHERE id IN (?, ?)")
      .bind(twoDaysAgo, old.id, off.id)
      .run();
    await env.DB.prepare(
      `INSERT INTO backup_schedules (pod_id, enabled, frequency, next_run_at, created_at, updated_at) VALUES (?, 0, 'daily', ?, ?, ?)`,
    )
      .bind(off.id, twoDaysAgo, twoDaysAgo, twoDaysAgo)
      .run();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "backup-schedules"),
    );
    expect(await nextRun(fresh.id)).toBeUndefined();
    expect(Date.parse((await nextRun(old.id)) as string)).toBeGreaterThan(Date.now());
    expect(await nextRun(off.id)).toBe(twoDaysAgo);
  });

  it("a backup stuck in_progress past the deadline ends failed and its object is deleted", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id });
    const id = newId("bk");
    const key = `backups/${pod.id}/${id}.tar.gz`;
    await env.BLOBS.put(key, await archive());
    const long = new Date(Date.now() - BACKUP_DEADLINE_MS - 60_000).toISOString();
    await env.DB.prepare(
      `INSERT INTO backups (id, pod_id, status, trigger, object_key, created_at) VALUES (?, ?, 'in_progress', 'manual', ?, ?)`,
    )
      .bind(id, pod.id, key, long)
      .run();
    const recent = newId("bk");
    await env.DB.prepare(
      `INSERT INTO backups (id, pod_id, status, trigger, object_key, created_at) VALUES (?, ?, 'in_progress', 'manual', ?, ?)`,
    )
      .bind(
        recent,
        (await insertPod({ hostId: host.id })).id,
        `backups/x/${recent}.tar.gz`,
        new Date().toISOString(),
      )
      .run();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "stuck-backups"),
    );
    const row = await env.DB.prepare("SELECT status, error FROM backups WHERE id = ?")
      .bind(id)
      .first<{ status: string; error: string }>();
    expect(row).toMatchObject({ status: "failed", error: expect.stringContaining("interrupted") });
    expect(await env.BLOBS.head(key)).toBeNull();
    const other = await env.DB.prepare("SELECT status FROM backups WHERE id = ?")
      .bind(recent)
      .first<{ status: string }>();
    expect(other?.status).toBe("in_progress");
  });
});

describe("deleting the pod", () => {
  it("deletes its backups, their objects and its schedule", async () => {
    const s = await setup("build");
    const a = await insertCompleted(s.pod.id, new Date(Date.now() - 86_400_000).toISOString());
    await call("PUT", `/api/pods/${s.pod.name}/backups/schedule`, { retention: 2 }, s.as);
    const del = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    const c = await nextCall(s.agent, "pod.delete");
    s.agent.ok(c, { deleted: true });
    expect((await del).status).toBe(200);
    expect(await env.BLOBS.head(a.key)).toBeNull();
    const left = await env.DB.prepare(
      "SELECT (SELECT count(*) FROM backups WHERE pod_id = ?1) + (SELECT count(*) FROM backup_schedules WHERE pod_id = ?1) AS n",
    )
      .bind(s.pod.id)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});

describe("attackers", () => {
  it("another team's pod is 404 on every backup route", async () => {
    const s = await setup("build");
    const { backup } = await backUp(s);
    const stranger = await registerUser();
    const as = { token: stranger.token };
    const base = `/api/pods/${s.pod.name}/backups`;
    const routes: [string, string, unknown?][] = [
      ["GET", base],
      ["POST", base],
      ["GET", `${base}/${backup.id}`],
      ["DELETE", `${base}/${backup.id}`],
      ["GET", `${base}/${backup.id}/download`],
      ["POST", `${base}/${backup.id}/restore`],
      ["GET", `${base}/schedule`],
      ["PUT", `${base}/schedule`, { enabled: false }],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, as);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const f = new FormData();
    f.append("file", new Blob([await archive()]), "x.tar.gz");
    const imp = await exports.default.fetch(
      new Request(`http://localhost${base}/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${stranger.token}`, "cf-connecting-ip": freshIp() },
        body: f,
      }),
    );
    expect(imp.status).toBe(404);
    // another pod's backup id under the caller's own pod is 404 too
    const mine = await setup("build");
    expect((await backupOf(mine.as, mine.pod.name, backup.id)).status).toBe(404);
    expect((await backupOf(s.as, s.pod.name, backup.id)).body.status).toBe("completed");
    expect(await env.BLOBS.head((await objectKey(backup.id)) as string)).not.toBeNull();
  });

  it("a host cannot read or write another host's backups, nor replace an archive once checked", async () => {
    const s = await setup();
    const other = await insertHost();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    expect((await putBackupArchive(other, res.body.id, await archive())).status).toBe(404);
    expect(
      (await hostFetch({ token: "hat_nonsense" }, "PUT", `/agent/backups/${res.body.id}`, "x")).status,
    ).toBe(401);
    const bytes = await archive();
    await putBackupArchive(s.host, res.body.id, bytes);
    expect((await getBackupArchive(other, res.body.id)).status).toBe(404);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s);
    await settled(s.as, s.pod.name, res.body.id);
    // a checked archive is never replaced, even by its own host
    expect((await putBackupArchive(s.host, res.body.id, await archive())).status).toBe(404);
    expect((await getBackupArchive(s.host, res.body.id)).bytes).toEqual(bytes);
    expect((await getBackupArchive(s.host, "bk_../../etc")).status).toBe(404);
    expect((await getBackupArchive(other, res.body.id)).status).toBe(404);
  });

  it("a host's retried upload replaces the object", async () => {
    const s = await setup();
    const res = await call("POST", `/api/pods/${s.pod.name}/backups`, undefined, s.as);
    const c = await nextCall(s.agent, "backup.create");
    expect((await putBackupArchive(s.host, res.body.id, await archive())).status).toBe(201);
    const bytes = await archive();
    expect((await putBackupArchive(s.host, res.body.id, bytes)).status).toBe(201);
    expect((await getBackupArchive(s.host, res.body.id)).bytes).toEqual(bytes);
    s.agent.ok(c, await facts(bytes));
    await answerVerify(s);
    expect((await settled(s.as, s.pod.name, res.body.id)).status).toBe("completed");
  });

  it("a body that breaks off stores nothing, past one multipart part too (putStream, the byte routes' pipe)", async () => {
    for (const before of [5, 9 * 1024 * 1024]) {
      const key = `backups/test/${newId("bk")}.tar.gz`;
      let sent = 0;
      const broken = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= before) {
            controller.error(new Error("agent killed"));
            return;
          }
          const n = Math.min(1024 * 1024, before - sent);
          controller.enqueue(new Uint8Array(n).fill(7));
          sent += n;
        },
      });
      await expect(
        putStream(env.BLOBS, key, broken, {
          maxBytes: 1024 ** 3,
          tooLarge: () => fail("payload_too_large", "x"),
        }),
      ).rejects.toThrow("agent killed");
      expect(await env.BLOBS.head(key)).toBeNull();
    }
  });
});
