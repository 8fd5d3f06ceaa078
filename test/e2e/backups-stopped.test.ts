import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceNames } from "../../agent/docker/naming";
import { type ApiClient, signUp } from "./support/api";
import { dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

const run = promisify(execFile);

/**
 * A stopped pod's manual backup and restore through the public API (docs/backups.md "A stopped
 * pod"): the Worker in workerd, the workflows, the agent working in helper containers on the real
 * engine. One Build pod with files and a PostgreSQL service, stopped: backed up (completed, the
 * dump inside), a start meanwhile 409; changed, stopped again and restored (left stopped, then
 * started with the old files and rows); the scheduled run skips it.
 */

const POD = "bk-stopped";

describe("backups of a stopped pod", () => {
  let stack: Stack;
  let api: ApiClient;
  let token: string;
  let work: string;
  let password = "";
  let backupId = "";

  const container = () => `${stack.prefix}-${POD}`;
  const sidecar = () => serviceNames(stack.prefix, POD, "postgresql").container;
  const sh = async (script: string) => {
    const res = await api.post(`/api/pods/${POD}/exec`, { command: ["bash", "-c", script], timeout_s: 60 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.exit_code, res.body.stderr).toBe(0);
    return (res.body.stdout as string).trim();
  };
  /** psql in the pod's network namespace, as the app reaches its database (the password on stdin) */
  const sql = (statements: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(
        "docker",
        [
          "run",
          "--rm",
          "-i",
          "--label",
          `podhost.prefix=${stack.prefix}`,
          "--network",
          `container:${container()}`,
          "--user",
          "1000:1000",
          "--cap-drop",
          "ALL",
          "podhost/postgresql:14",
          "/bin/bash",
          "-c",
          "read -r pw; PGPASSWORD=$pw exec psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -U pod_user -d pod_user",
        ],
        { stdio: ["pipe", "pipe", "pipe"] },
      );
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.on("close", (code) => resolve({ code, out: out.trim() }));
      child.stdin.end(`${password}\n${statements}\n`);
    });
  const running = async (name: string) => Boolean((await dockerInspect("container", name))?.State?.Running);
  const helpers = async () =>
    (
      await run("docker", [
        "ps",
        "-a",
        "--filter",
        `label=podhost.prefix=${stack.prefix}`,
        "--filter",
        `label=podhost.backup.pod=${POD}`,
        "--format",
        "{{.Names}}",
      ])
    ).stdout
      .split("\n")
      .filter(Boolean);
  const stop = async () => {
    const res = await api.post(`/api/pods/${POD}/stop`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe("stopped");
  };
  const start = async () => {
    const res = await api.post(`/api/pods/${POD}/start`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await waitForPodStatus(api, POD, "running");
  };
  /** stopped through the API and on the engine, its database too, no helper left */
  const stillStopped = async () => {
    expect((await api.get(`/api/pods/${POD}`)).body.status).toBe("stopped");
    expect(await running(container())).toBe(false);
    expect(await running(sidecar())).toBe(false);
    expect(await helpers()).toEqual([]);
  };

  beforeAll(async () => {
    stack = await startStack("bkstop", { direct: true });
    const alice = await signUp(stack.api, "Alice");
    api = alice.api;
    token = alice.token;
    work = await mkdtemp(path.join(tmpdir(), "podhost-e2e-bkstop-"));
    await waitForHostOnline(api);
    const res = await api.post("/api/pods", { name: POD, preset: "nodejs", plan_slug: "build" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitForPodStatus(api, POD, "running", 120_000);
    const svc = await api.post(`/api/pods/${POD}/services`, { service_type: "postgresql" });
    expect(svc.status, JSON.stringify(svc.body)).toBe(202);
    await waitFor(
      "PostgreSQL to run",
      async () => {
        const list = (await api.get(`/api/pods/${POD}/services`)).body as { status: string }[];
        if (list.some((s) => s.status === "error")) throw new Error(JSON.stringify(list));
        return list[0]?.status === "running" ? true : undefined;
      },
      180_000,
    );
    password = (await api.get(`/api/pods/${POD}/services/postgresql/credentials`)).body.password;
  }, 400_000);

  afterAll(async () => {
    await stack?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  }, 120_000);

  it("backs up the stopped pod: completed and test-restored, its dump inside, a start meanwhile 409, left stopped", {
    timeout: 400_000,
  }, async () => {
    // 40 MB that do not compress: the job lasts long enough to try a start in the middle of it
    await sh(
      "cd ~/app && echo v1 > data.txt && mkdir -p notes && echo kept > notes/a.md && head -c 40000000 /dev/urandom > big.bin",
    );
    expect(
      await sql(
        "CREATE TABLE notes (id int PRIMARY KEY, body text); INSERT INTO notes VALUES (1, 'hello pg');",
      ),
    ).toMatchObject({ code: 0 });
    await stop();

    const res = await api.post(`/api/pods/${POD}/backups`, { note: "while stopped" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: "in_progress", trigger: "manual", note: "while stopped" });
    backupId = res.body.id;
    await waitFor("the helper to work on the pod", async () =>
      (await helpers()).length > 0 ? true : undefined,
    );
    const refused = await api.post(`/api/pods/${POD}/start`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error).toMatch(/stopped and being backed up/);

    const done = await waitFor(
      "the backup to settle",
      async () => {
        const b = (await api.get(`/api/pods/${POD}/backups/${backupId}`)).body;
        return b.status !== "in_progress" ? b : undefined;
      },
      300_000,
    );
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", verify_error: null });
    expect(done.verified_at).toBeTruthy();
    await stillStopped();

    const got = await fetch(`${stack.api}/api/pods/${POD}/backups/${backupId}/download`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(got.status).toBe(200);
    const archive = path.join(work, "stopped.tar.gz");
    await writeFile(archive, new Uint8Array(await got.arrayBuffer()));
    const members = (await run("tar", ["-tzf", archive])).stdout.split("\n");
    expect(members[0]).toBe("podhost-backup.json");
    expect(members).toEqual(
      expect.arrayContaining(["databases/postgresql.sql", "app/data.txt", "app/notes/a.md", "app/big.bin"]),
    );
    const dump = (await run("tar", ["-xzOf", archive, "databases/postgresql.sql"], { maxBuffer: 1 << 26 }))
      .stdout;
    expect(dump).toContain("CREATE TABLE public.notes");
    expect(dump).toContain("hello pg");
  });

  it("restores the stopped pod: left stopped, then started with its old files and rows", {
    timeout: 400_000,
  }, async () => {
    await start();
    await sh("cd ~/app && echo v2 > data.txt && echo new > added.txt && rm big.bin");
    const changed = await waitFor(
      "PostgreSQL back after the start",
      async () => {
        const r = await sql("UPDATE notes SET body = 'changed'; SELECT body FROM notes;");
        return r.code === 0 ? r : undefined;
      },
      60_000,
    );
    expect(changed.out).toBe("changed");
    await stop();

    const res = await api.post(`/api/pods/${POD}/backups/${backupId}/restore`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ status: "restoring", backup_id: backupId });
    const event = await waitFor(
      "the restore to end",
      async () => {
        const list = (await api.get(`/api/pods/${POD}/events`)).body.events as { type: string }[];
        return list.find((e) => e.type === "restore_completed" || e.type === "restore_failed");
      },
      300_000,
    );
    expect(event.type, JSON.stringify(event)).toBe("restore_completed");
    await stillStopped();

    await start();
    expect(
      await sh("cat ~/app/data.txt ~/app/notes/a.md; test -e ~/app/added.txt && echo still || true"),
    ).toBe("v1\nkept");
    expect(await sh("stat -c %s ~/app/big.bin")).toBe("40000000");
    const rows = await waitFor(
      "PostgreSQL with the restored rows",
      async () => {
        const r = await sql("SELECT body FROM notes;");
        return r.code === 0 ? r : undefined;
      },
      60_000,
    );
    expect(rows.out).toBe("hello pg");
  });

  it("the scheduled run still skips the stopped pod: its backups neither added to nor deleted", {
    timeout: 120_000,
  }, async () => {
    await stop();
    const before = (await api.get(`/api/pods/${POD}/backups`)).body;
    expect(before.backups.map((b: { id: string }) => b.id)).toEqual([backupId]);
    // the cron as the runtime fires it, two days on: the pod (never scheduled) is due by then
    const at = Date.now() + 2 * 86_400_000;
    const fired = await fetch(`${stack.api}/cdn-cgi/handler/scheduled?time=${at}`);
    expect(fired.status, await fired.text()).toBe(200);
    const schedule = await waitFor("the pod's next run to move on", async () => {
      const s = (await api.get(`/api/pods/${POD}/backups/schedule`)).body;
      return Date.parse(s.next_run_at) > at ? s : undefined;
    });
    expect(schedule.enabled).toBe(true);
    const after = (await api.get(`/api/pods/${POD}/backups`)).body;
    expect(after.backups.map((b: { id: string; trigger: string }) => [b.id, b.trigger])).toEqual([
      [backupId, "manual"],
    ]);
    await stillStopped();
  });
});
