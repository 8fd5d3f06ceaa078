import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFile, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBackupStore } from "../../agent/backups/store";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { BackupManifest } from "../../shared/protocol/backups";
import { type BackupServer, startBackupServer } from "../support/backup-server";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * Backups on the host against the real Docker engine and a local stand-in of the Worker's two byte
 * routes (test/support/backup-server.ts): create, verify and restore end to end, and the archives
 * an attacker would hand in.
 */

const run = promisify(execFile);
const sha256Of = async (file: string) =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
const id = () => `bk_${Math.random().toString(36).slice(2, 12)}x`;

describe("backups on the host", () => {
  let agent: Agent;
  let server: BackupServer;
  let handlers: HandlerTable;
  const pod = "bkapp";
  let container: string;

  /** a bash script as pod_user in the pod; its stdout */
  const sh = async (script: string, ...args: string[]) => {
    const r = await execInContainer(agent.docker, container, ["/bin/bash", "-c", script, "bash", ...args], {
      workingDir: "/home/pod_user",
    });
    if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}: ${r.stderr}`);
    return r.stdout;
  };
  const create = (backupId: string, name = pod) =>
    handlers["backup.create"]({ name, backupId, preset: "nodejs" }, agent.ctx);
  const expected = async (backupId: string) => {
    const file = server.fileOf(backupId);
    return { backupId, bytes: (await readFile(file)).length, sha256: await sha256Of(file) };
  };
  const listing = async (backupId: string) =>
    (await run("tar", ["-tvzf", server.fileOf(backupId)], { maxBuffer: 64 * 1024 * 1024 })).stdout
      .trim()
      .split("\n");

  beforeAll(async () => {
    server = await startBackupServer();
    agent = await startAgent();
    handlers = createHandlers({ ...agent, backups: createBackupStore(server.url, server.token) });
    await handlers["pod.create"](podSpec(pod, { preset: "nodejs", port: 3000 }), agent.ctx);
    container = podNames(agent.config.namePrefix, pod).container;
  }, 120_000);

  afterAll(async () => {
    await agent?.cleanup();
    await server?.close();
  });

  const seed = () =>
    sh(`set -e
cd ~/app
echo original > index.txt
mkdir -p sub data node_modules/dep
echo a > sub/a.txt
echo dep > node_modules/dep/index.js
ln -sfn /etc link
/usr/bin/python3 -c 'import sqlite3; c=sqlite3.connect("data/app.db"); c.execute("create table t(v text)"); c.executemany("insert into t values (?)", [("row%d" % i,) for i in range(100)]); c.commit()'
`);
  const rows = async () =>
    Number(
      (
        await sh(
          `/usr/bin/python3 -c 'import sqlite3; print(sqlite3.connect("app/data/app.db").execute("select count(*) from t").fetchone()[0])'`,
        )
      ).trim(),
    );

  let good = "";

  it("makes an archive: manifest first, then databases, then app/ without node_modules, links kept as links", async () => {
    await seed();
    good = id();
    const made = await create(good);
    expect(made).toMatchObject({
      ok: true,
      databases: [{ kind: "sqlite", source: "data/app.db", file: "databases/sqlite-1.db" }],
    });
    if (!made.ok) return;
    const file = server.fileOf(good);
    expect(made.sha256).toBe(await sha256Of(file));
    expect(made.bytes).toBe((await readFile(file)).length);
    const lines = await listing(good);
    const names = lines.map((l) => l.split(/\s+/).slice(5).join(" "));
    expect(names[0]).toBe("podhost-backup.json");
    expect(names[1]).toBe("databases/");
    expect(names[2]).toBe("databases/sqlite-1.db");
    expect(names.slice(3).every((n) => n.startsWith("app/"))).toBe(true);
    expect(names).toContain("app/index.txt");
    expect(names).toContain("app/sub/a.txt");
    expect(names.some((n) => n.includes("node_modules"))).toBe(false);
    expect(lines.find((l) => l.includes("app/link"))).toMatch(/^l.* app\/link -> \/etc$/);
    expect(made.files).toBe(names.filter((n) => n.startsWith("app/")).length);
    const manifest = BackupManifest.parse(
      JSON.parse((await run("tar", ["-xzOf", file, "podhost-backup.json"])).stdout),
    );
    expect(manifest).toMatchObject({
      format: 1,
      pod,
      preset: "nodejs",
      excluded: ["node_modules", ".next", "dist"],
    });
    // the spool is gone from the pod's home
    expect((await sh("ls -A ~/.pod/backup 2>/dev/null || true")).trim()).toBe("");
  }, 120_000);

  it("verifies a good archive in the throwaway box", async () => {
    const checked = await handlers["backup.verify"](await expected(good), agent.ctx);
    expect(checked).toMatchObject({ ok: true, databases: [{ kind: "sqlite" }] });
  }, 120_000);

  it("restores: files and rows back, dependency dirs dropped and named", async () => {
    await sh(`set -e
cd ~/app
echo changed > index.txt
rm sub/a.txt
echo new > new.txt
/usr/bin/python3 -c 'import sqlite3; c=sqlite3.connect("data/app.db"); c.execute("delete from t"); c.commit()'`);
    expect(await rows()).toBe(0);
    const restored = await handlers["backup.restore"](
      { ...(await expected(good)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored).toEqual({
      ok: true,
      databases: expect.any(Array),
      dependencies_dropped: ["node_modules"],
    });
    expect(await sh("cat app/index.txt app/sub/a.txt")).toBe("original\na\n");
    expect(await sh("ls -A app")).not.toContain("new.txt");
    expect(await sh("ls -A app")).not.toContain("node_modules");
    expect((await sh("readlink app/link")).trim()).toBe("/etc");
    expect(await rows()).toBe(100);
    expect((await sh("ls -A ~/.pod/restore 2>/dev/null || true")).trim()).toBe("");
  }, 120_000);
});
