import { execFile } from "node:child_process";
import { copyFile, readFile, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOLD_BYTES, HoldBack } from "../../agent/backups/early-load";
import { createBackupStore } from "../../agent/backups/store";
import { execInContainer } from "../../agent/docker/exec";
import { podNames, serviceNames } from "../../agent/docker/naming";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { BackupManifest } from "../../shared/protocol/backups";
import { type BackupServer, newBackupId, startBackupServer } from "../support/backup-server";
import { type Agent, podShell, podSpec, startAgent, until } from "./helpers";

/**
 * Backups on the host against the real Docker engine and a local stand-in of the Worker's two byte
 * routes (test/support/backup-server.ts): create, verify and restore end to end, and the archives
 * an attacker would hand in.
 */

const run = promisify(execFile);
const id = newBackupId;

describe("backups on the host", () => {
  let agent: Agent;
  let server: BackupServer;
  let handlers: HandlerTable;
  const pod = "bkapp";
  let container: string;

  /** a bash script as pod_user in the pod; its stdout */
  const sh = (script: string, ...args: string[]) => podShell(agent, container)(script, ...args);
  const create = (backupId: string, name = pod) =>
    handlers["backup.create"]({ name, backupId, preset: "nodejs" }, agent.ctx);
  const expected = (backupId: string) => server.expected(backupId);
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
    expect(made.sha256).toBe((await server.expected(good)).sha256);
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
    const manifest = BackupManifest().parse(
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
    // the staging dir (the old app in it) is removed just after the answer
    expect(
      await until(async () => (await sh("ls -A ~/.pod/restore 2>/dev/null || true")).trim() === ""),
    ).toBe(true);
  }, 120_000);

  /** a hand-made archive stored under a fresh id (python's tarfile on the host writes any member name) */
  const handMade = async (members: string) => {
    const backupId = id();
    const script = `
import io, json, sys, tarfile
out = tarfile.open(sys.argv[1], "w:gz")
def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.linkname = link; ti.size = len(data); ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    out.addfile(ti, io.BytesIO(data) if data else None)
manifest = {"format": 1, "pod": "${pod}", "preset": "nodejs", "created_at": "2024-01-01T00:00:00Z", "databases": [], "excluded": []}
def man(m=manifest):
    add("podhost-backup.json", json.dumps(m).encode())
${members}
out.close()
`;
    await run("python3", ["-c", script, server.fileOf(backupId)]);
    return expected(backupId);
  };
  const restore = async (e: { backupId: string; bytes: number; sha256: string }) =>
    handlers["backup.restore"]({ ...e, name: pod, preset: "nodejs" }, agent.ctx);
  /** a command context whose log lines are kept (their messages, in order) */
  const withLogWatch = () => {
    const said: string[] = [];
    const keep =
      (write: (msg: string, fields?: Record<string, unknown>) => void) =>
      (msg: string, fields?: Record<string, unknown>) => {
        said.push(msg);
        write(msg, fields);
      };
    const log = { ...agent.log, info: keep(agent.log.info), warn: keep(agent.log.warn) };
    return { said, ctx: { ...agent.ctx, log } };
  };

  it("refuses a corrupted archive (bytes flipped in the store) in verify and restore before touching the pod", async () => {
    const e = await expected(good);
    const bad = id();
    await copyFile(server.fileOf(good), server.fileOf(bad));
    const bytes = await readFile(server.fileOf(bad));
    const at = Math.floor(bytes.length / 2);
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    await writeFile(server.fileOf(bad), bytes);
    await sh("echo marker > ~/app/marker.txt");
    const checked = await handlers["backup.verify"]({ ...e, backupId: bad }, agent.ctx);
    expect(checked).toMatchObject({ ok: false, reason: expect.stringMatching(/^checksum mismatch/) });
    const restored = await restore({ ...e, backupId: bad });
    expect(restored).toMatchObject({ ok: false, files_restored: false, dump_path: null });
    if (!restored.ok) expect(restored.reason).toMatch(/^checksum mismatch/);
    expect(await sh("cat ~/app/marker.txt")).toBe("marker\n");
    // the staging dir (the old app in it) is removed just after the answer
    expect(
      await until(async () => (await sh("ls -A ~/.pod/restore 2>/dev/null || true")).trim() === ""),
    ).toBe(true);
    // a truncated read-back is refused the same way
    await writeFile(server.fileOf(bad), bytes.subarray(0, 100));
    expect(await handlers["backup.verify"]({ ...e, backupId: bad }, agent.ctx)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^checksum mismatch/),
    });
    await sh("rm ~/app/marker.txt");
  }, 120_000);

  it("fails when the store's count or hash differs from what the agent sent", async () => {
    server.lie = "0".repeat(64);
    try {
      const made = await create(id());
      expect(made).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/control plane stored .* but the agent sent/),
      });
    } finally {
      server.lie = null;
    }
  }, 120_000);

  it("fails on a missing or an empty ~/app, and leaves no spool behind", async () => {
    await sh("mv ~/app ~/app.saved");
    try {
      expect(await create(id())).toEqual({ ok: false, reason: "expected directory missing: ~/app" });
      await sh("mkdir ~/app ~/app/node_modules");
      expect(await create(id())).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/^nothing to back up/),
      });
      expect((await sh("ls -A ~/.pod/backup 2>/dev/null || true")).trim()).toBe("");
    } finally {
      await sh("rm -rf ~/app && mv ~/app.saved ~/app");
    }
  }, 120_000);

  it("archives the contents of a symlinked ~/app (a git release)", async () => {
    await sh(
      "set -e; mkdir -p ~/releases/r1; echo rel > ~/releases/r1/rel.txt; mv ~/app ~/app.saved; ln -s releases/r1 ~/app",
    );
    try {
      const backupId = id();
      expect(await create(backupId)).toMatchObject({ ok: true });
      expect((await listing(backupId)).map((l) => l.split(/\s+/).slice(5).join(" "))).toContain(
        "app/rel.txt",
      );
    } finally {
      await sh("rm ~/app && mv ~/app.saved ~/app && rm -rf ~/releases/r1");
    }
  }, 120_000);

  it("leaves a dump that cannot be put back inside the pod and names it", async () => {
    // a consistent sqlite copy whose place is under a file: the copy back fails
    const e =
      await handMade(`man({**manifest, "databases": [{"kind": "sqlite", "file": "databases/sqlite-1.db", "bytes": 1024, "source": "index.txt/x.db"}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/sqlite-1.db", b"SQLite format 3\\x00" + b"\\x00" * 1008)
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"from the archive\\n")`);
    const restored = await restore(e);
    expect(restored).toMatchObject({
      ok: false,
      files_restored: true,
      dump_path: expect.stringMatching(/^\/tmp\/podhost-restore-bk_.*-sqlite-1\.db$/),
    });
    if (restored.ok) return;
    expect(restored.reason).toMatch(/sqlite database index.txt\/x.db/);
    expect((await sh('stat -c %s "$1"', restored.dump_path ?? "")).trim()).toBe("1024");
    expect(await sh("cat ~/app/index.txt")).toBe("from the archive\n");
  }, 120_000);

  it("a hostile archive (../ and absolute members, writes through a link) cannot write outside the pod's home", async () => {
    const e = await handMade(`man()
add("app/", kind=tarfile.DIRTYPE)
add("app/ok.txt", b"ok")
add("../../../../escape-up.txt", b"x")
add("app/../../../../escape-mid.txt", b"x")
add("/tmp/escape-abs.txt", b"x")
add("/etc/escape-etc.txt", b"x")
add("app/etc", kind=tarfile.SYMTYPE, link="/etc")
add("app/etc/escape-through-link.txt", b"x")
add("app/up", kind=tarfile.SYMTYPE, link="../../..")
add("app/up/escape-through-up.txt", b"x")`);
    // the test-restore box refuses it outright
    expect(await handlers["backup.verify"](e, agent.ctx)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/unsafe member name/),
    });
    const restored = await restore(e);
    console.log("restore of a hostile archive:", JSON.stringify(restored));
    // whatever the outcome, nothing landed outside the home (nor in /tmp, the pod's other writable place)
    const found = await sh(
      "find / -xdev -name 'escape-*' 2>/dev/null; find /tmp /home -name 'escape-*' 2>/dev/null; true",
    );
    expect(found.split("\n").filter((l) => l && !l.startsWith("/home/pod_user/"))).toEqual([]);
    expect((await run("find", ["/etc", "/tmp", "-maxdepth", "2", "-name", "escape-*"])).stdout).toBe("");
    expect(restored.ok === false || (await sh("cat ~/app/ok.txt")) === "ok").toBe(true);
  }, 120_000);

  it("a gzip bomb and a flood of members are only read inside the box, within its limits", async () => {
    const bomb = await handMade(`man()
add("app/", kind=tarfile.DIRTYPE)
ti = tarfile.TarInfo("app/zeros"); ti.size = 1 << 28
class Zeros(io.RawIOBase):
    def __init__(self): self.left = 1 << 28
    def readinto(self, b):
        n = min(len(b), self.left); b[:n] = bytes(n); self.left -= n; return n
out.addfile(ti, Zeros())
for i in range(20000):
    add("app/f/%d" % i)`);
    expect(bomb.bytes).toBeLessThan(8 * 1024 * 1024);
    const rss0 = process.memoryUsage().rss;
    const checked = await handlers["backup.verify"](bomb, agent.ctx);
    expect(checked).toMatchObject({ ok: true, files: 20002 });
    expect(process.memoryUsage().rss - rss0).toBeLessThan(100 * 1024 * 1024);
  }, 300_000);

  it("streams a 300 MB archive both ways with the agent's RSS flat, about as fast as a bare tar czf", async () => {
    // half random (incompressible), half text: a bare `tar czf` has real work on both halves
    await sh(`set -e; mkdir -p ~/app/big
/usr/bin/head -c 150000000 /dev/urandom > ~/app/big/random.bin
/usr/bin/python3 -c 'import sys
with open(sys.argv[1], "w") as f:
    for i in range(3000000): f.write("line %d of a log the app wrote, more or less compressible\\n" % i)' ~/app/big/text.log`);
    /** peak RSS and peak Buffer memory (arrayBuffers: bytes held, also those the GC has not yet collected) */
    const sample = () => {
      const m0 = process.memoryUsage();
      const peak = { rss: m0.rss, buffers: m0.arrayBuffers, rss0: m0.rss, buffers0: m0.arrayBuffers };
      const timer = setInterval(() => {
        const m = process.memoryUsage();
        peak.rss = Math.max(peak.rss, m.rss);
        peak.buffers = Math.max(peak.buffers, m.arrayBuffers);
      }, 20);
      return () => {
        clearInterval(timer);
        return peak;
      };
    };
    try {
      const bare0 = performance.now();
      // to a pipe: GNU tar reads nothing when its archive is /dev/null itself
      await sh("/bin/tar czf - -C ~/app . | /usr/bin/wc -c");
      const bareMs = performance.now() - bare0;
      const backupId = id();
      let stop = sample();
      const t0 = performance.now();
      const made = await create(backupId);
      const createMs = performance.now() - t0;
      const c = stop();
      expect(made).toMatchObject({ ok: true });
      if (!made.ok) return;
      const e = await expected(backupId);
      stop = sample();
      const r0 = performance.now();
      const restored = await restore(e);
      const restoreMs = performance.now() - r0;
      const r = stop();
      expect(restored).toMatchObject({ ok: true });
      const mb = (n: number) => Math.round(n / 1024 / 1024);
      console.log(
        `300 MB of files: archive ${mb(made.bytes)} MB; bare tar czf ${Math.round(bareMs)} ms, backup.create ${Math.round(createMs)} ms (${(createMs / bareMs).toFixed(2)}x), backup.restore ${Math.round(restoreMs)} ms`,
        `\nRSS (this process: the agent and the stand-in server) create ${mb(c.rss0)} -> peak ${mb(c.rss)} MB, restore ${mb(r.rss0)} -> peak ${mb(r.rss)} MB;`,
        `Buffer memory create ${mb(c.buffers0)} -> peak ${mb(c.buffers)} MB, restore ${mb(r.buffers0)} -> peak ${mb(r.buffers)} MB`,
      );
      expect(made.bytes).toBeGreaterThan(150_000_000);
      // nothing held whole: far below the archive's size both ways
      for (const p of [c, r]) {
        expect(p.rss - p.rss0).toBeLessThan(64 * 1024 * 1024);
        expect(p.buffers - p.buffers0).toBeLessThan(64 * 1024 * 1024);
      }
      expect(createMs / bareMs).toBeLessThanOrEqual(1.2);
      expect((await sh("stat -c %s ~/app/big/random.bin")).trim()).toBe("150000000");
    } finally {
      await sh("rm -rf ~/app/big");
    }
  }, 600_000);

  describe("with a PostgreSQL sidecar", () => {
    let sidecar: string;
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

    beforeAll(async () => {
      // the real sidecar, as an install through the API makes it
      const spec = podSpec(pod, { preset: "nodejs", port: 3000 });
      const installed = await handlers["service.install"](
        { name: pod, type: "postgresql", password: "Abcdefghijklmnop1234", limits: spec.limits },
        agent.ctx,
      );
      expect(installed.port).toBe(5432);
      sidecar = serviceNames(agent.config.namePrefix, pod, "postgresql").container;
      await psql(
        "create table items(v text); insert into items select 'item' || g from generate_series(1, 500) g",
      );
    }, 180_000);

    afterAll(async () => {
      await handlers["service.remove"](
        { name: pod, type: "postgresql", limits: podSpec(pod).limits },
        agent.ctx,
      );
    });

    let withDb = "";

    it("dumps the service first, and restore brings the rows back", async () => {
      withDb = id();
      const made = await create(withDb);
      expect(made).toMatchObject({ ok: true });
      if (!made.ok) return;
      // the service's dump comes first (SQLite copies, if ~/app has any, after it)
      expect(made.databases[0]).toMatchObject({ kind: "postgresql", file: "databases/postgresql.sql" });
      const dump = (
        await run("tar", ["-xzOf", server.fileOf(withDb), "databases/postgresql.sql"], { maxBuffer: 1 << 26 })
      ).stdout;
      expect(dump).toContain("CREATE TABLE public.items");
      // pg_dump 15.14+ writes its own \restrict pair: svc-load drops it and reads the rest restricted
      expect(dump).toMatch(/^\\restrict [A-Za-z0-9]+$/m);
      await psql("delete from items; insert into items values ('after')");
      const { ctx, said } = withLogWatch();
      const restored = await handlers["backup.restore"](
        { ...(await expected(withDb)), name: pod, preset: "nodejs" },
        ctx,
      );
      expect(restored).toMatchObject({ ok: true });
      expect(await psql("select count(*) from items")).toBe("500");
      // the dump loaded while the app's files unpacked (agent/backups/early-load.ts)
      expect(said).toContain("backup restore: loading a dump while the app's files unpack");
    }, 180_000);

    it("a dump loading while the app unpacks replaces nothing when the archive does not check out", async () => {
      // The recorded hash is not the archive's: the whole archive streams (the dump starts loading
      // as soon as it is unpacked), and only then is the difference known. The store holds the
      // gzip trailer back for a while: the dump is whole in staging, and its load has all the time
      // it needs to reach its end, if it could.
      await psql("delete from items; insert into items values ('kept')");
      // withDb's archive with 1 MiB of noise at the end of app/: gzip reads 32 KiB at a time, so
      // the dump is unpacked (and its load started) well before the store's held-back end.
      const e = await handMade(`import os
src = tarfile.open(${JSON.stringify(server.fileOf(withDb))}, "r:gz")
for m in src.getmembers():
    out.addfile(m, src.extractfile(m) if m.isfile() else None)
add("app/zz-noise.bin", os.urandom(1 << 20))`);
      const { ctx, said } = withLogWatch();
      server.stall = { tail: 8, ms: 2000 };
      const restored = await handlers["backup.restore"](
        { ...e, sha256: e.sha256.replace(/^./, (c) => (c === "0" ? "1" : "0")), name: pod, preset: "nodejs" },
        ctx,
      ).finally(() => {
        server.stall = null;
      });
      expect(restored).toMatchObject({ ok: false, files_restored: false });
      if (!restored.ok) expect(restored.reason).toMatch(/^checksum mismatch/);
      expect(said).toContain("backup restore: loading a dump while the app's files unpack");
      expect(await psql("select string_agg(v, ',') from items")).toBe("kept");
      // the stopped load's side database went too
      expect(await psql("select count(*) from pg_database where datname like 'pod_user_%'")).toBe("0");
    }, 180_000);

    it("a test-restore loads the dump into a scratch PostgreSQL", async () => {
      const checked = await handlers["backup.verify"](await expected(withDb), agent.ctx);
      expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
      if (checked.ok) expect(checked.databases.map((d) => d.kind)).toContain("postgresql");
    }, 180_000);

    it("a test-restore refuses a dump that does not load, naming it", async () => {
      const e =
        await handMade(`man({**manifest, "databases": [{"kind": "postgresql", "file": "databases/postgresql.sql", "bytes": 84}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/postgresql.sql", b"CREATE TABLE broken (;\\n-- PostgreSQL database dump complete\\n-- padding to the end .\\n")
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"x\\n")`);
      const checked = await handlers["backup.verify"](e, agent.ctx);
      expect(checked).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/postgresql\.sql does not load/),
      });
    }, 180_000);

    it("a dump that does not load fails the restore and is left in the pod's /tmp", async () => {
      const e =
        await handMade(`man({**manifest, "databases": [{"kind": "postgresql", "file": "databases/postgresql.sql", "bytes": 33}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/postgresql.sql", b"this is not sql at all; garbage\\n")
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"x\\n")`);
      const restored = await restore(e);
      expect(restored).toMatchObject({
        ok: false,
        files_restored: true,
        dump_path: expect.stringMatching(/^\/tmp\/podhost-restore-bk_/),
      });
      if (restored.ok) return;
      expect(restored.reason).toMatch(/loading the postgresql dump failed/);
      expect(await sh('cat "$1"', restored.dump_path ?? "")).toContain("garbage");
    }, 180_000);

    it("a dump's psql meta-commands never run in the sidecar: \\! and \\o |cmd refused, the data kept", async () => {
      // An imported archive is the tenant's: its dump may carry psql meta-commands, which would run
      // a shell (as the sidecar's user, beside its data and admin socket) had psql obeyed them.
      await psql("delete from items; insert into items values ('kept')");
      const hostile = `src = tarfile.open(${JSON.stringify(server.fileOf(withDb))}, "r:gz")
dump = src.extractfile("databases/postgresql.sql").read()
head, sep, rest = dump.partition(b"SET statement_timeout")
evil = head + b"select 1; \\\\! touch /var/lib/svc/pwned-by-dump\\n\\\\o |touch /var/lib/svc/pwned-by-pipe\\nselect 2;\\n" + sep + rest
man({**manifest, "databases": [{"kind": "postgresql", "file": "databases/postgresql.sql", "bytes": len(evil)}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/postgresql.sql", evil)
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"x\\n")`;
      const e = await handMade(hostile);
      const dumped = (
        await run("tar", ["-xzOf", server.fileOf(e.backupId), "databases/postgresql.sql"], {
          maxBuffer: 1 << 26,
        })
      ).stdout;
      expect(dumped).toContain("\\! touch /var/lib/svc/pwned-by-dump");
      const checked = await handlers["backup.verify"](e, agent.ctx);
      expect(checked).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/postgresql\.sql does not load/),
      });
      const restored = await restore(e);
      expect(restored).toMatchObject({ ok: false });
      if (!restored.ok) expect(restored.reason).toMatch(/loading the postgresql dump failed.*restricted/);
      const data = await execInContainer(agent.docker, sidecar, ["/bin/ls", "-A", "/var/lib/svc"]);
      expect(data.stdout).not.toContain("pwned");
      expect(await psql("select string_agg(v, ',') from items")).toBe("kept");
    }, 180_000);

    it("a dump of a service the pod does not have fails naming it, before anything is touched", async () => {
      const e =
        await handMade(`man({**manifest, "databases": [{"kind": "redis", "file": "databases/redis.rdb", "bytes": 4}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/redis.rdb", b"REDI")
add("app/", kind=tarfile.DIRTYPE)
add("app/other.txt", b"x\\n")`);
      const before = await sh("ls -A ~/app");
      expect(await restore(e)).toMatchObject({
        ok: false,
        files_restored: false,
        reason: expect.stringMatching(/redis/),
      });
      expect(await sh("ls -A ~/app")).toBe(before);
    }, 120_000);
  });

  describe("with a MariaDB sidecar", () => {
    let sidecar: string;
    const PASSWORD = "Abcdefghijklmnop5678";
    /** SQL in the sidecar: as its admin, or as the app signs in (pod_user and its password) */
    const sql = async (query: string, as: "admin" | "app" = "admin") => {
      const login =
        as === "admin"
          ? ["--defaults-file=/opt/podhost/etc/mariadb.cnf", "-usvc"]
          : ["--no-defaults", "--socket=/run/svc/mysqld.sock", "-upod_user", `-p${PASSWORD}`];
      const r = await execInContainer(
        agent.docker,
        sidecar,
        ["mariadb", ...login, "-N", "-e", query, "pod_user"],
        {
          podPath: true,
        },
      );
      if (r.exitCode !== 0) throw new Error(r.stderr);
      return r.stdout.trim();
    };
    let dumped = "";

    beforeAll(async () => {
      const installed = await handlers["service.install"](
        { name: pod, type: "mysql", password: PASSWORD, limits: podSpec(pod).limits },
        agent.ctx,
      );
      expect(installed.port).toBe(3306);
      sidecar = serviceNames(agent.config.namePrefix, pod, "mysql").container;
      await sql(
        "create table items(v text); insert into items values ('a'), ('b'), ('c'); create procedure n() select count(*) from items",
        "app",
      );
      dumped = id();
      expect(await create(dumped)).toMatchObject({ ok: true });
    }, 180_000);

    afterAll(async () => {
      await handlers["service.remove"]({ name: pod, type: "mysql", limits: podSpec(pod).limits }, agent.ctx);
    });

    /** the real dump with `extra` (SQL or client commands) before its first CREATE TABLE */
    const hostileArchive = (extra: string) =>
      handMade(`src = tarfile.open(${JSON.stringify(server.fileOf(dumped))}, "r:gz")
dump = src.extractfile("databases/mysql.sql").read()
head, sep, rest = dump.partition(b"DROP TABLE IF EXISTS")
evil = head + ${JSON.stringify(extra)}.encode() + b"\\n" + sep + rest
man({**manifest, "databases": [{"kind": "mysql", "file": "databases/mysql.sql", "bytes": len(evil)}]})
add("databases/", kind=tarfile.DIRTYPE)
add("databases/mysql.sql", evil)
add("app/", kind=tarfile.DIRTYPE)
add("app/index.txt", b"x\\n")`);

    it("loads a dump as pod_user: rows and routines back, and the app still signs in with its password", async () => {
      await sql("delete from items", "app");
      expect(await restore(await expected(dumped))).toMatchObject({ ok: true });
      expect(await sql("select count(*) from items", "app")).toBe("3");
      expect(await sql("call n()", "app")).toBe("3");
      // the load's own sign-in is gone: pod_user has its one password again
      expect(
        await sql(
          "select json_length(json_extract(priv, '$.auth_or')) from mysql.global_priv where user = 'pod_user'",
        ),
      ).not.toBe("2");
      const cnf = await execInContainer(agent.docker, sidecar, ["/bin/ls", "-A", "/run/svc"]);
      expect(cnf.stdout).not.toContain("load.cnf");
    }, 180_000);

    it("a dump's client commands (system, source) never run, and it cannot grant, add users or name the admin as definer", async () => {
      // An imported archive is the tenant's: loaded by the admin, its dump could make pod_user a
      // superuser or a trigger run as the admin; the client's system would run a shell in the sidecar.
      await sql("delete from items; insert into items values ('kept')", "app");
      const attempts: [string, RegExp][] = [
        ["system touch /var/lib/svc/pwned-by-dump", /sandbox/],
        ["source /opt/podhost/etc/mariadb.cnf", /sandbox/],
        ["GRANT ALL PRIVILEGES ON *.* TO 'pod_user'@'%' WITH GRANT OPTION;", /denied/i],
        ["CREATE USER 'intruder'@'%' IDENTIFIED BY 'intruder-password';", /denied/i],
        ["CREATE DEFINER='svc'@'localhost' PROCEDURE escalate() SELECT 1;", /denied/i],
      ];
      for (const [extra, why] of attempts) {
        const e = await hostileArchive(extra);
        const restored = await restore(e);
        expect(restored, extra).toMatchObject({ ok: false });
        if (!restored.ok) expect(restored.reason, extra).toMatch(/loading the mysql dump failed/);
        if (!restored.ok) expect(restored.reason, extra).toMatch(why);
        const checked = await handlers["backup.verify"](e, agent.ctx);
        expect(checked, extra).toMatchObject({
          ok: false,
          reason: expect.stringMatching(/mysql\.sql does not load/),
        });
      }
      const data = await execInContainer(agent.docker, sidecar, ["/bin/ls", "-A", "/var/lib/svc"]);
      expect(data.stdout).not.toContain("pwned");
      expect(await sql("select group_concat(user) from mysql.user where user in ('intruder')")).toBe("NULL");
      expect(await sql("show grants for 'pod_user'@'%'")).not.toMatch(
        /ON \*\.\*.*ALL PRIVILEGES|GRANT OPTION/,
      );
      expect(
        await sql("select count(*) from information_schema.routines where routine_name = 'escalate'"),
      ).toBe("0");
      // the app signs in as before
      expect(await sql("select 'signed in'", "app")).toBe("signed in");
    }, 300_000);
  });
});

describe("a restore's dump gate (no Docker)", () => {
  it("passes a stream on but its last bytes, which follow, with the end, only on release", async () => {
    const gate = new HoldBack(5);
    const seen: string[] = [];
    let ended = false;
    gate.on("data", (b: Buffer) => seen.push(b.toString()));
    gate.on("end", () => {
      ended = true;
    });
    gate.write("abc");
    gate.write("defgh");
    gate.end("ij");
    await new Promise((r) => setTimeout(r, 20));
    expect(seen.join("")).toBe("abcde");
    expect(ended).toBe(false);
    gate.release();
    await new Promise((r) => setTimeout(r, 20));
    expect(seen.join("")).toBe("abcdefghij");
    expect(ended).toBe(true);
  });

  it("released early, it ends with its source", async () => {
    const gate = new HoldBack(HOLD_BYTES);
    gate.release();
    const chunks: Buffer[] = [];
    gate.on("data", (b: Buffer) => chunks.push(b));
    const ended = new Promise((r) => gate.on("end", r));
    gate.end(Buffer.alloc(HOLD_BYTES * 2, 1));
    await ended;
    expect(Buffer.concat(chunks).length).toBe(HOLD_BYTES * 2);
  });
});
