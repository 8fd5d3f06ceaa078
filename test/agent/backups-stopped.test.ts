import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { promisify } from "node:util";
import type { ContainerInspectInfo } from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HELPER_BACKUP_POD,
  HELPER_BACKUP_SERVICE,
  removeBackupLeftovers,
} from "../../agent/backups/stopped-pod";
import { createBackupStore } from "../../agent/backups/store";
import { execInContainer } from "../../agent/docker/exec";
import { backupHelperName, LABEL_BACKUP_POD, podNames, serviceNames } from "../../agent/docker/naming";
import { LABEL_HELPER, runAsPodUser } from "../../agent/docker/pod-user";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { type BackupServer, newBackupId, startBackupServer } from "../support/backup-server";
import { type Agent, podSpec, startAgent, until } from "./helpers";

/**
 * A stopped pod's backup and restore on the host (docs/backups.md "A stopped pod"), against the real
 * engine and the stand-in byte routes: the job runs in helpers made like the pod (isolation read
 * from `docker inspect` while they run), its PostgreSQL is dumped and loaded by a helper on the
 * sidecar's data, a start meanwhile is refused, and the pod and its sidecar are left stopped with
 * no helper behind. One pod with files, a SQLite database and a PostgreSQL service for the file.
 */

const run = promisify(execFile);
const id = newBackupId;

let agent: Agent;
let server: BackupServer;
let handlers: HandlerTable;

beforeAll(async () => {
  server = await startBackupServer();
  agent = await startAgent();
  handlers = createHandlers({ ...agent, backups: createBackupStore(server.url, server.token) });
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
  await server?.close();
});

const running = async (name: string) => (await agent.docker.getContainer(name).inspect()).State.Running;
const helpersOf = async (pod: string) =>
  agent.docker.listContainers({
    all: true,
    filters: { label: [`podhost.prefix=${agent.config.namePrefix}`, `${LABEL_BACKUP_POD}=${pod}`] },
  });
const expected = (backupId: string) => server.expected(backupId);
/** a script in a running container as uid 1000 with the image's PATH; its stdout */
const inside = async (container: string, script: string) => {
  const r = await execInContainer(agent.docker, container, ["/bin/bash", "-c", script], { podPath: true });
  if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}: ${r.stderr}`);
  return r.stdout.trim();
};

describe("backups of a stopped pod on the host", () => {
  const pod = "bkstopped";
  const spec = podSpec(pod, { preset: "nodejs", port: 3000 });
  let container: string;
  let sidecar: string;

  const helpers = () => helpersOf(pod);
  /** a script as pod_user against the pod's home, running or not (a helper of its own when stopped) */
  const sh = async (script: string, ...args: string[]) => {
    const r = await runAsPodUser(agent.docker, agent.config.namePrefix, pod, [
      "/bin/bash",
      "-c",
      script,
      "bash",
      ...args,
    ]);
    if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}: ${r.stderr}`);
    return r.stdout;
  };
  /** SQL as the admin over the sidecar's socket (the pod must run) */
  const psql = async (sql: string) => {
    const r = await execInContainer(
      agent.docker,
      sidecar,
      [
        "psql",
        "-X",
        "-q",
        "-At",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        "/run/svc",
        "-U",
        "svc_admin",
        "-d",
        "pod_user",
        "-c",
        sql,
      ],
      { podPath: true },
    );
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  const sqliteRows = async () =>
    (
      await sh(
        `/usr/bin/python3 -c 'import sqlite3; print(sqlite3.connect("app/data/app.db").execute("select count(*) from t").fetchone()[0])'`,
      )
    ).trim();
  const stop = async () => {
    await handlers["pod.stop"]({ name: pod }, agent.ctx);
    expect(await running(container)).toBe(false);
    expect(await running(sidecar)).toBe(false);
  };
  const start = () => handlers["pod.start"]({ name: pod }, agent.ctx);
  /** started, and its PostgreSQL answering again (the sidecar starts with the pod; its server a moment later) */
  const startAndWait = async () => {
    await start();
    await until(() => psql("select 1").catch(() => ""), 60_000, 200);
  };
  /** the pod and its sidecar still stopped, no helper left */
  const leftAsItWas = async () => {
    expect(await running(container)).toBe(false);
    expect(await running(sidecar)).toBe(false);
    expect(await helpers()).toEqual([]);
  };

  beforeAll(async () => {
    await handlers["pod.create"](spec, agent.ctx);
    container = podNames(agent.config.namePrefix, pod).container;
    sidecar = serviceNames(agent.config.namePrefix, pod, "postgresql").container;
    await handlers["service.install"](
      { name: pod, type: "postgresql", password: "Abcdefghijklmnop1234", limits: spec.limits },
      agent.ctx,
    );
    await psql(
      "create table items(v text); insert into items select 'item' || g from generate_series(1, 500) g",
    );
    await sh(`set -e
cd ~/app
echo original > index.txt
mkdir -p data node_modules/dep
echo dep > node_modules/dep/index.js
/usr/bin/python3 -c 'import sqlite3; c=sqlite3.connect("data/app.db"); c.execute("create table t(v text)"); c.executemany("insert into t values (?)", [("row%d" % i,) for i in range(100)]); c.commit()'`);
    await stop();
  }, 180_000);

  let good = "";

  it("backs it up in helpers made like the pod (no network, its volumes only), dumps PostgreSQL, refuses a start meanwhile, leaves it stopped", async () => {
    good = id();
    const seen = new Map<string, ContainerInspectInfo>();
    let insideNet = "";
    let startRefused: unknown = null;
    let watching = true;
    // watch the helpers come and go while the job runs; a start is tried once the pod's helper is up
    const watch = (async () => {
      while (watching) {
        for (const c of await helpers()) {
          const name = c.Names[0]?.replace(/^\//, "") ?? "";
          if (seen.has(name)) continue;
          const info = await agent.docker
            .getContainer(c.Id)
            .inspect()
            .catch(() => null);
          if (!info) continue;
          seen.set(name, info);
          if (info.Config.Labels[LABEL_HELPER] === HELPER_BACKUP_POD) {
            startRefused = await start().then(
              () => "started",
              (err: unknown) => ({ code: (err as { code?: string }).code, message: String(err) }),
            );
            const net = await execInContainer(agent.docker, name, ["/bin/ls", "/sys/class/net"]).catch(
              () => null,
            );
            insideNet = net?.stdout.trim() ?? "";
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const made = await handlers["backup.create"](
      { name: pod, backupId: good, preset: "nodejs", whenStopped: "helper" },
      agent.ctx,
    ).finally(() => {
      watching = false;
    });
    await watch;
    expect(made, JSON.stringify(made)).toMatchObject({
      ok: true,
      databases: [
        { kind: "postgresql", file: "databases/postgresql.sql" },
        { kind: "sqlite", file: "databases/sqlite-1.db", source: "data/app.db" },
      ],
    });
    const file = server.fileOf(good);
    const names = (await run("tar", ["-tzf", file])).stdout.split("\n");
    expect(names[0]).toBe("podhost-backup.json");
    expect(names).toEqual(expect.arrayContaining(["app/index.txt", "app/data/app.db"]));
    expect(names.some((n) => n.includes("node_modules"))).toBe(false);
    const dump = (await run("tar", ["-xzOf", file, "databases/postgresql.sql"], { maxBuffer: 1 << 26 }))
      .stdout;
    expect(dump).toContain("CREATE TABLE public.items");
    expect(dump).toContain("item500");

    // a start while the job ran: refused at once with the reason, not queued behind it
    expect(startRefused).toMatchObject({
      code: "conflict",
      message: expect.stringMatching(/being backed up/),
    });
    // the helpers: the pod's and the PostgreSQL one, made like the pod and its sidecar
    const podInfo = await agent.docker.getContainer(container).inspect();
    const pgInfo = await agent.docker.getContainer(sidecar).inspect();
    const podHelper = seen.get(backupHelperName(container));
    const pgHelper = seen.get(backupHelperName(sidecar));
    expect(podHelper?.Config.Labels[LABEL_HELPER]).toBe(HELPER_BACKUP_POD);
    expect(pgHelper?.Config.Labels[LABEL_HELPER]).toBe(HELPER_BACKUP_SERVICE);
    expect(insideNet).toBe("lo");
    for (const [helper, like, volume, target] of [
      [podHelper, podInfo, podNames(agent.config.namePrefix, pod).volume, "/home/pod_user"],
      [pgHelper, pgInfo, serviceNames(agent.config.namePrefix, pod, "postgresql").volume, "/var/lib/svc"],
    ] as const) {
      if (!helper) throw new Error("a helper was never seen");
      expect(helper.Image).toBe(like.Image);
      expect(helper.Config.User).toBe("1000:1000");
      expect(helper.Config.Labels["podhost.pod"]).toBeUndefined();
      const h = helper.HostConfig;
      expect(h.Privileged).toBe(false);
      expect(h.CapDrop).toEqual(["ALL"]);
      expect(h.CapAdd ?? []).toEqual([]);
      expect(h.ReadonlyRootfs).toBe(true);
      expect(h.SecurityOpt?.some((o: string) => o.startsWith("no-new-privileges"))).toBe(true);
      expect(h.SecurityOpt?.some((o: string) => o.startsWith("seccomp="))).toBe(true);
      expect(h.NetworkMode).toBe("none");
      expect(Object.keys(helper.NetworkSettings.Networks ?? {}).filter((n) => n !== "none")).toEqual([]);
      expect(h.Binds ?? []).toEqual([]);
      expect(helper.Mounts.map((m) => [m.Type, m.Name, m.Destination])).toEqual([["volume", volume, target]]);
      expect(h.Memory).toBe(like.HostConfig.Memory);
      expect(h.NanoCpus).toBe(like.HostConfig.NanoCpus);
      expect(h.PidsLimit).toBe(like.HostConfig.PidsLimit);
      expect(h.Tmpfs).toEqual(expect.objectContaining(like.HostConfig.Tmpfs ?? {}));
    }
    await leftAsItWas();
    expect((await sh("ls -A ~/.pod/backup 2>/dev/null || true")).trim()).toBe("");
  }, 240_000);

  it("a scheduled backup (whenStopped refuse, or absent) is refused and starts nothing", async () => {
    for (const whenStopped of ["refuse", undefined] as const) {
      const backupId = id();
      expect(
        await handlers["backup.create"]({ name: pod, backupId, preset: "nodejs", whenStopped }, agent.ctx),
      ).toEqual({ ok: false, reason: "pod is not running; start it first" });
      await expect(stat(server.fileOf(backupId))).rejects.toThrow();
    }
    await leftAsItWas();
  }, 60_000);

  it("restores it while stopped: files, SQLite and PostgreSQL rows back, the pod and its sidecar left stopped", async () => {
    await startAndWait();
    await psql("delete from items; insert into items values ('after')");
    await sh(`set -e
cd ~/app
echo changed > index.txt
echo new > new.txt
/usr/bin/python3 -c 'import sqlite3; c=sqlite3.connect("data/app.db"); c.execute("delete from t"); c.commit()'`);
    await stop();
    const restored = await handlers["backup.restore"](
      { ...(await expected(good)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored, JSON.stringify(restored)).toEqual({
      ok: true,
      databases: expect.any(Array),
      dependencies_dropped: ["node_modules"],
    });
    await leftAsItWas();
    // the staging dir went with the helper, not after it
    expect((await sh("ls -A ~/.pod/restore 2>/dev/null || true")).trim()).toBe("");
    expect(await sh("cat ~/app/index.txt; test -e ~/app/new.txt && echo still || true")).toBe("original\n");
    expect(await sqliteRows()).toBe("100");
    await startAndWait();
    expect(await psql("select count(*) from items")).toBe("500");
    await stop();
  }, 240_000);

  it("a dump that does not load fails the restore, is left in the home (the stopped pod has no /tmp), the data untouched", async () => {
    const backupId = id();
    const script = `
import io, json, sys, tarfile
out = tarfile.open(sys.argv[1], "w:gz")
def add(name, data=b"", kind=tarfile.REGTYPE):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.size = len(data); ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    out.addfile(ti, io.BytesIO(data) if data else None)
add("podhost-backup.json", json.dumps({"format": 1, "pod": "${pod}", "preset": "nodejs", "created_at": "2024-01-01T00:00:00Z",
    "databases": [{"kind": "postgresql", "file": "databases/postgresql.sql", "bytes": 33}], "excluded": []}).encode())
add("databases/", kind=tarfile.DIRTYPE)
add("databases/postgresql.sql", b"this is not sql at all; garbage\\n")
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"from the bad archive\\n")
out.close()
`;
    await run("python3", ["-c", script, server.fileOf(backupId)]);
    const restored = await handlers["backup.restore"](
      { ...(await expected(backupId)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored).toMatchObject({
      ok: false,
      files_restored: true,
      dump_path: `/home/pod_user/.pod/restore-failed/podhost-restore-${backupId}-postgresql.sql`,
    });
    if (restored.ok) return;
    expect(restored.reason).toMatch(/loading the postgresql dump failed/);
    expect(await sh('cat "$1"', restored.dump_path ?? "")).toContain("garbage");
    await leftAsItWas();
    await startAndWait();
    expect(await psql("select count(*) from items")).toBe("500");
    await stop();
  }, 240_000);

  it("helpers left by an agent that died mid-job go at the agent's start and before their sidecar starts", async () => {
    const image = (await agent.docker.getContainer(container).inspect()).Image;
    const leftover = async (name: string, kind: string) => {
      const c = await agent.docker.createContainer({
        name,
        Image: image,
        Cmd: ["/bin/sleep", "600"],
        User: "1000:1000",
        Labels: {
          "podhost.prefix": agent.config.namePrefix,
          [LABEL_HELPER]: kind,
          [LABEL_BACKUP_POD]: pod,
        },
        HostConfig: { NetworkMode: "none", CapDrop: ["ALL"], Init: true },
      });
      await c.start();
    };
    await leftover(backupHelperName(container), HELPER_BACKUP_POD);
    await leftover(backupHelperName(sidecar), HELPER_BACKUP_SERVICE);
    await removeBackupLeftovers(agent.docker, agent.config.namePrefix, agent.log);
    expect(await helpers()).toEqual([]);
    await leftover(backupHelperName(sidecar), HELPER_BACKUP_SERVICE);
    await startAndWait();
    expect(await helpers()).toEqual([]);
    expect(await running(sidecar)).toBe(true);
    expect(await psql("select count(*) from items")).toBe("500");
  }, 120_000);
});

describe("a stopped pod's MariaDB and Redis", () => {
  const pod = "bkstopped2";
  const spec = podSpec(pod, { preset: "static" });
  const side = (type: string) => serviceNames(agent.config.namePrefix, pod, type).container;
  const my = (sql: string) =>
    inside(
      side("mysql"),
      `mariadb --defaults-file=/opt/podhost/etc/mariadb.cnf -usvc -N pod_user -e "${sql}"`,
    );
  // the image's own admin client: the password read from its config, sent on stdin
  const redis = (...command: string[]) =>
    inside(side("redis"), `. /opt/podhost/lib/svc.sh; redis_cmd "${command.join(" ")}"`);
  const startAndWait = async () => {
    await handlers["pod.start"]({ name: pod }, agent.ctx);
    await until(() => my("select 1").catch(() => ""), 60_000, 200);
    await until(() => redis("PING").catch(() => ""), 60_000, 200);
  };
  const stop = async () => {
    await handlers["pod.stop"]({ name: pod }, agent.ctx);
    for (const type of ["mysql", "redis"]) expect(await running(side(type))).toBe(false);
  };
  const leftAsItWas = async () => {
    expect(await running(podNames(agent.config.namePrefix, pod).container)).toBe(false);
    for (const type of ["mysql", "redis"]) expect(await running(side(type))).toBe(false);
    expect(await helpersOf(pod)).toEqual([]);
  };

  beforeAll(async () => {
    await handlers["pod.create"](spec, agent.ctx);
    for (const type of ["mysql", "redis"] as const)
      await handlers["service.install"](
        { name: pod, type, password: "Abcdefghijklmnop1234", limits: spec.limits },
        agent.ctx,
      );
    await my("create table notes(v text); insert into notes values ('hello maria')");
    expect(await redis("SET", "greeting", "hello-redis")).toBe("OK");
    await runAsPodUser(agent.docker, agent.config.namePrefix, pod, [
      "/bin/sh",
      "-c",
      "mkdir -p ~/app && echo static > ~/app/index.html",
    ]);
    await stop();
  }, 240_000);

  it("dumps both in helpers while stopped, and loads them back into the stopped pod", async () => {
    const backupId = id();
    const made = await handlers["backup.create"](
      { name: pod, backupId, preset: "static", whenStopped: "helper" },
      agent.ctx,
    );
    expect(made, JSON.stringify(made)).toMatchObject({ ok: true });
    if (!made.ok) return;
    expect(made.databases.map((d) => d.kind).sort()).toEqual(["mysql", "redis"]);
    const dump = (await run("tar", ["-xzOf", server.fileOf(backupId), "databases/mysql.sql"])).stdout;
    expect(dump).toContain("hello maria");
    await leftAsItWas();

    await startAndWait();
    await my("delete from notes; insert into notes values ('changed')");
    expect(await redis("SET", "greeting", "changed")).toBe("OK");
    await stop();
    const restored = await handlers["backup.restore"](
      { ...(await expected(backupId)), name: pod, preset: "static" },
      agent.ctx,
    );
    expect(restored, JSON.stringify(restored)).toMatchObject({ ok: true });
    await leftAsItWas();
    await startAndWait();
    expect(await my("select v from notes")).toBe("hello maria");
    expect(await redis("GET", "greeting")).toBe("hello-redis");
  }, 240_000);
});
