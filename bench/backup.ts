/**
 * Backup and restore bench (issue #13): a pod holding 500 MB of files and a 100 MB PostgreSQL
 * database, backed up and restored, beside the same jobs done by hand on the same machine in the
 * same run.
 *
 *   tsx bench/backup.ts [--reps 3] [--files-mb 500] [--db-mb 100]
 *
 * What runs: the agent's host half without the Worker — `backup.create` and `backup.restore` called
 * on the agent's handler table (as test/agent/backups.test.ts does), with the archive streamed to a
 * local stand-in of the Worker's byte routes on 127.0.0.1 (test/support/backup-server.ts: the
 * agent's own HTTP store code runs unmodified; bodies land in a temp file, as R2 would take them).
 * The pod and its PostgreSQL sidecar are real containers on the real engine, installed through the
 * agent's own `pod.create` and `service.install`. The Worker's share (its route piping the body into
 * R2, the workflow's steps) is not in these figures.
 *
 * The data: `--files-mb` of files under ~/app in 1 MiB files, half random bytes (incompressible),
 * half text (compresses well), plus a `node_modules` the backup leaves out; a table of ~`--db-mb`
 * of rows in the sidecar.
 *
 * Each repetition, ours and the floor taking turns (rotating order):
 * - backup — ours: `backup.create` (pg_dump into the pod's spool, then tar | gzip -1 in the pod,
 *   streamed, counted and hashed, to the store). Floor: `pg_dump` in the sidecar to a file, then a
 *   bare `tar czf` of ~/app (without node_modules) in the pod, both by `docker exec`.
 *   Target: ours ≤ 1.2× the floor.
 * - restore — ours: `backup.restore` (archive read back and hashed into a staging dir, app swapped
 *   in, the dump loaded by `svc-load`). Floor: the floor's archive unpacked by `tar xzf` in the pod
 *   and the floor's dump loaded by `psql` into a fresh database, both by `docker exec`.
 *   Target: ours ≤ 1.3× the floor.
 * Everything made here is removed at the end, also on failure or Ctrl-C.
 */
import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { parseArgs } from "node:util";
import { createBackupStore } from "../agent/backups/store";
import { podNames, serviceNames } from "../agent/docker/naming";
import { createHandlers } from "../agent/handlers/pods";
import type { HandlerTable } from "../agent/handlers/types";
import { type Agent, podSpec, startAgent } from "../test/agent/helpers";
import { type BackupServer, startBackupServer } from "../test/support/backup-server";
import { fmt, median } from "./stats";
import { positiveInt } from "./support/args";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { backupRatio: 1.2, restoreRatio: 1.3 };
const v = verdicts("backup");

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "3" },
    "files-mb": { type: "string", default: "500" },
    "db-mb": { type: "string", default: "100" },
  },
});
const REPS = positiveInt("reps", args.reps);
const FILES_MB = positiveInt("files-mb", args["files-mb"]);
const DB_MB = positiveInt("db-mb", args["db-mb"]);

const now = () => performance.now();
const POD = "benchbk";
const PASSWORD = "BenchPassword0123456789";

/** `docker exec` of argv (no shell on the host), its stdout; throws with stderr on a failure */
async function dockerExec(container: string, argv: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("docker", ["exec", ...(input === undefined ? [] : ["-i"]), container, ...argv]);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(Buffer.concat(out).toString())
        : reject(
            new Error(`docker exec ${argv[0]} exited ${code}: ${Buffer.concat(err).toString().slice(-500)}`),
          ),
    );
    if (input !== undefined) child.stdin.end(input);
  });
}

async function main() {
  console.log(
    `bench/backup: ${FILES_MB} MB of files + a ${DB_MB} MB PostgreSQL table, ${REPS} reps; load ${machineLoad()}`,
  );
  let agent: Agent | undefined;
  let server: BackupServer | undefined;
  const stop = async () => {
    await agent?.cleanup().catch(() => undefined);
    await server?.close().catch(() => undefined);
  };
  process.once("SIGINT", () => void stop().then(() => process.exit(130)));
  try {
    server = await startBackupServer();
    agent = await startAgent();
    const ctx = agent.ctx;
    const handlers: HandlerTable = createHandlers({
      ...agent,
      backups: createBackupStore(server.url, server.token),
    });
    const spec = podSpec(POD, {
      preset: "nodejs",
      port: 3000,
      limits: { cpu: 1, memoryMb: 1024, diskGb: 10, pids: 256 },
    });
    await handlers["pod.create"](spec, agent.ctx);
    const pod = podNames(agent.config.namePrefix, POD).container;
    const installed = await handlers["service.install"](
      { name: POD, type: "postgresql", password: PASSWORD, limits: spec.limits },
      agent.ctx,
    );
    const sidecar = serviceNames(agent.config.namePrefix, POD, "postgresql").container;
    console.log(`pod ${pod}, PostgreSQL ${installed.version} in ${sidecar}`);

    // the data: 1 MiB files, half random, half text; node_modules (left out of both archives)
    const half = Math.floor(FILES_MB / 2);
    await dockerExec(pod, [
      "/bin/bash",
      "-c",
      `set -e; cd ~/app; mkdir -p data/rand data/text node_modules/dep
       for i in $(seq 1 ${half}); do head -c 1048576 /dev/urandom > data/rand/f$i.bin; done
       yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c 1048576 > data/text/f0.txt
       for i in $(seq 1 ${FILES_MB - half}); do cp data/text/f0.txt data/text/f$i.txt; done
       head -c 10485760 /dev/urandom > node_modules/dep/blob.bin`,
    ]);
    const psql = (sql: string) =>
      dockerExec(sidecar, [
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
      ]);
    // ~250 bytes a row
    const rows = Math.round((DB_MB * 1024 * 1024) / 250);
    await psql(
      `create table items(id int primary key, body text); insert into items select g, md5(g::text) || repeat('x', 200) from generate_series(1, ${rows}) g`,
    );
    console.log(`database: ${(await psql("select pg_size_pretty(pg_database_size('pod_user'))")).trim()}`);

    const samples = { backupOurs: [] as number[], backupFloor: [] as number[] };
    const restore = { ours: [] as number[], floor: [] as number[] };
    let bytes = 0;
    for (let rep = 0; rep < REPS; rep++) {
      const id = `bk_bench${rep}${Date.now().toString(36)}`;
      const oursFirst = rep % 2 === 0;
      const backupOurs = async () => {
        const t0 = now();
        const made = await handlers["backup.create"]({ name: POD, backupId: id, preset: "nodejs" }, ctx);
        if (!made.ok) throw new Error(`backup.create failed: ${made.reason}`);
        samples.backupOurs.push(now() - t0);
        bytes = made.bytes;
        return made;
      };
      const backupFloor = async () => {
        const t0 = now();
        await dockerExec(sidecar, [
          "/bin/bash",
          "-c",
          "pg_dump -h /run/svc -U svc_admin pod_user > /var/lib/svc/floor.sql",
        ]);
        await dockerExec(pod, [
          "/bin/bash",
          "-c",
          "tar czf ~/.pod/floor.tar.gz -C ~/app --exclude=./node_modules .",
        ]);
        samples.backupFloor.push(now() - t0);
      };
      let made: Awaited<ReturnType<typeof backupOurs>>;
      if (oursFirst) {
        made = await backupOurs();
        await backupFloor();
      } else {
        await backupFloor();
        made = await backupOurs();
      }
      if (!made.ok) throw new Error("unreachable");

      const restoreOurs = async () => {
        const t0 = now();
        const r = await handlers["backup.restore"](
          { name: POD, preset: "nodejs", backupId: id, bytes: made.bytes, sha256: made.sha256 },
          ctx,
        );
        if (!r.ok) throw new Error(`backup.restore failed: ${r.reason}`);
        restore.ours.push(now() - t0);
      };
      const restoreFloor = async () => {
        const t0 = now();
        await dockerExec(pod, [
          "/bin/bash",
          "-c",
          "rm -rf ~/.pod/floor-app && mkdir -p ~/.pod/floor-app && tar xzf ~/.pod/floor.tar.gz -C ~/.pod/floor-app",
        ]);
        await dockerExec(sidecar, [
          "/bin/bash",
          "-c",
          "dropdb -h /run/svc -U svc_admin --if-exists floor && createdb -h /run/svc -U svc_admin floor && psql -X -q -v ON_ERROR_STOP=1 -h /run/svc -U svc_admin -d floor -f /var/lib/svc/floor.sql > /dev/null",
        ]);
        restore.floor.push(now() - t0);
      };
      if (oursFirst) {
        await restoreOurs();
        await restoreFloor();
      } else {
        await restoreFloor();
        await restoreOurs();
      }
      await rm(server.fileOf(id), { force: true });
      console.log(
        `rep ${rep + 1}: backup ${fmt(samples.backupOurs.at(-1) ?? 0, 0)} ms (floor ${fmt(samples.backupFloor.at(-1) ?? 0, 0)}), restore ${fmt(restore.ours.at(-1) ?? 0, 0)} ms (floor ${fmt(restore.floor.at(-1) ?? 0, 0)})`,
      );
    }
    const m = {
      backupOurs: median(samples.backupOurs),
      backupFloor: median(samples.backupFloor),
      restoreOurs: median(restore.ours),
      restoreFloor: median(restore.floor),
    };
    v.ratio({
      figure: "backup vs pg_dump + tar czf",
      ours: m.backupOurs,
      floor: m.backupFloor,
      target: TARGET.backupRatio,
      unit: "ms",
    });
    v.ratio({
      figure: "restore vs tar xzf + psql",
      ours: m.restoreOurs,
      floor: m.restoreFloor,
      target: TARGET.restoreRatio,
      unit: "ms",
    });
    console.log(`archive: ${fmt(bytes / 1024 / 1024, 0)} MB; load ${machineLoad()}`);
    v.finish();
  } finally {
    await stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
