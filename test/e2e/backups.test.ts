import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createGzip } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "./support/api";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

const run = promisify(execFile);

/**
 * Backups end to end through the public API: the host makes the archive in the pod and streams it
 * into R2 through the Worker, test-restores it, and restores it into the same pod or, imported, into
 * another; a large import streams with the Worker's and the agent's memory flat (256 MB in `npm test`,
 * 1 GB with PODHOST_IMPORT_MB=1024: see IMPORT_MB).
 */

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * The large import's size, and a quarter of it first (what grows with the bytes is the difference).
 * 256 MB in `npm test`: the local runtime (workerd 1.20260426.1) segfaults now and then on 1 GB
 * imports ("Received signal #11", in about 1 of 3 runs here and in two clean CI runs, while the
 * upload streams or as the test-restore reads it back; docs/reliability.md). A 4x step still shows
 * a body held in memory. PODHOST_IMPORT_MB=1024 runs the gigabyte.
 */
const IMPORT_MB = Number(process.env.PODHOST_IMPORT_MB ?? 256);

describe("backups", () => {
  let stack: Stack;
  let alice: User;
  let work: string;
  let first: string;
  let second: string;
  let third: string;

  const sh = async (pod: string, script: string) => {
    const res = await alice.api.post(`/api/pods/${pod}/exec`, { command: ["sh", "-c", script] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.stdout as string).trim();
  };
  const settled = (pod: string, id: string) =>
    waitFor(
      `backup ${id} to settle`,
      async () => {
        const res = await alice.api.get(`/api/pods/${pod}/backups/${id}`);
        return res.body?.status && res.body.status !== "in_progress" ? res.body : undefined;
      },
      240_000,
    );
  const eventOf = (pod: string, types: string[]) =>
    waitFor(
      `one of ${types.join(", ")} on ${pod}`,
      async () => {
        const list = (await alice.api.get(`/api/pods/${pod}/events`)).body.events as {
          type: string;
          data?: unknown;
          message?: string;
        }[];
        return list.find((e) => types.includes(e.type));
      },
      240_000,
    );
  const download = async (pod: string, id: string) => {
    const res = await fetch(`${stack.api}/api/pods/${pod}/backups/${id}/download`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
  };
  /** multipart import with curl (as a user would; Node's fetch would hold a 1 GB body) */
  const importFile = async (pod: string, file: string, note: string) => {
    const { stdout } = await run(
      "curl",
      [
        "-sS",
        // a stalled upload fails with curl's message instead of holding the test to its timeout
        "--max-time",
        "300",
        "-H",
        `authorization: Bearer ${alice.token}`,
        "-H",
        "Expect:",
        "-F",
        `file=@${file};type=application/gzip`,
        "-F",
        `note=${note}`,
        "-w",
        "\n%{http_code}",
        `${stack.api}/api/pods/${pod}/backups/import`,
      ],
      { maxBuffer: 1024 * 1024 },
    );
    const lines = stdout.trimEnd().split("\n");
    const status = Number(lines.pop());
    return { status, body: JSON.parse(lines.join("\n") || "null") };
  };

  beforeAll(async () => {
    // workerd's warnings and errors (its own crash report included) are printed: see IMPORT_MB.
    stack = await startStack("backups", { direct: true, logLevel: "warn" });
    alice = await signUp(stack.api, "Alice");
    work = await mkdtemp(path.join(tmpdir(), "podhost-e2e-backups-"));
    const tag = stack.prefix.slice(-4);
    first = `bk-one-${tag}`;
    second = `bk-two-${tag}`;
    third = `bk-self-${tag}`;
    await waitForHostOnline(alice.api);
    for (const name of [first, second, third]) {
      const res = await alice.api.post("/api/pods", { name, preset: "nodejs", plan_slug: "build" });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    }
    for (const name of [first, second, third]) await waitForPodStatus(alice.api, name, "running");
  });

  afterAll(async () => {
    await stack?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  let backupId: string;
  let archive: string;

  it("backs up the app's files (dependencies left out), checked and test-restored", {
    timeout: 300_000,
  }, async () => {
    await sh(
      first,
      "cd ~/app && echo v1 > data.txt && mkdir -p notes node_modules/dep && echo kept > notes/a.md && echo dep > node_modules/dep/index.js",
    );
    const res = await alice.api.post(`/api/pods/${first}/backups`, { note: "before the change" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ pod_name: first, note: "before the change", status: "in_progress" });
    backupId = res.body.id;
    const done = await settled(first, backupId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", trigger: "manual" });
    expect(done.size).toBeGreaterThan(0);
    expect(done.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(done.verified_at, JSON.stringify(done)).toBeTruthy();

    const list = await alice.api.get(`/api/pods/${first}/backups`);
    expect(list.body).toMatchObject({ count: 1, limit: 5 });
    expect(list.body.backups[0].id).toBe(backupId);

    const { res: got, bytes } = await download(first, backupId);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-disposition")).toContain(".tar.gz");
    expect(bytes.byteLength).toBe(done.size);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(done.sha256);
    archive = path.join(work, "first.tar.gz");
    await writeFile(archive, bytes);
    const members = (await run("tar", ["-tzf", archive])).stdout.split("\n");
    expect(members[0]).toBe("podhost-backup.json");
    expect(members).toEqual(expect.arrayContaining(["app/data.txt", "app/notes/a.md"]));
    expect(members.some((m) => m.includes("node_modules"))).toBe(false);
  });

  it("restores the files into the pod and says to reload for dependencies", {
    timeout: 300_000,
  }, async () => {
    await sh(first, "cd ~/app && echo v2 > data.txt && echo new > added.txt");
    const res = await alice.api.post(`/api/pods/${first}/backups/${backupId}/restore`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ status: "restoring", backup_id: backupId });
    const event = await eventOf(first, ["restore_completed", "restore_failed"]);
    expect(event.type, JSON.stringify(event)).toBe("restore_completed");
    expect(
      await sh(first, "cat ~/app/data.txt; cat ~/app/notes/a.md; test -e ~/app/added.txt && echo still"),
    ).toBe("v1\nkept");
  });

  it("imports a downloaded archive into another pod, which restores from it", {
    timeout: 300_000,
  }, async () => {
    const res = await importFile(second, archive, "from the first pod");
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ trigger: "import", note: "from the first pod" });
    const done = await settled(second, res.body.id);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    const restore = await alice.api.post(`/api/pods/${second}/backups/${done.id}/restore`);
    expect(restore.status, JSON.stringify(restore.body)).toBe(202);
    const event = await eventOf(second, ["restore_completed", "restore_failed"]);
    expect(event.type, JSON.stringify(event)).toBe("restore_completed");
    expect(await sh(second, "cat ~/app/data.txt")).toBe("v1");
  });

  it("dumps and restores a Redis the app runs itself, reached with the URL in its env", {
    timeout: 300_000,
  }, async () => {
    // the user brings a redis-server and redis-cli into the pod (here: from the service image,
    // with the libraries the pod image lacks) and starts it, as over SSH
    const image = process.env.PODHOST_SERVICE_IMAGE_REDIS ?? "podhost/redis:7";
    await run("bash", [
      "-c",
      `set -o pipefail; docker run --rm --entrypoint /bin/bash ${image} -c 'mkdir -p /tmp/r && cd /usr/lib/x86_64-linux-gnu && cp -L /usr/bin/redis-server /usr/bin/redis-cli libatomic.so.1 liblzf.so.1 libjemalloc.so.2 /tmp/r/ && tar -C /tmp -cf - r' | docker exec -i -u 1000:1000 ${stack.prefix}-${third} /bin/tar -C /home/pod_user -xf -`,
    ]);
    const env = await alice.api.put(`/api/pods/${third}/env`, {
      vars: { REDIS_URL: "redis://:e2e-pass@127.0.0.1:6390" },
    });
    expect(env.status, JSON.stringify(env.body)).toBe(200);
    const cli = (args: string) =>
      sh(third, `LD_LIBRARY_PATH=$HOME/r $HOME/r/redis-cli -p 6390 -a e2e-pass --no-auth-warning ${args}`);
    await sh(
      third,
      "mkdir -p ~/rdata && echo page > ~/app/index.html && LD_LIBRARY_PATH=$HOME/r $HOME/r/redis-server --port 6390 --bind 127.0.0.1 --requirepass e2e-pass --dir $HOME/rdata --daemonize yes --logfile $HOME/redis.log",
    );
    await waitFor("the pod's own redis", async () => (await cli("PING")) === "PONG", 10_000);
    expect(await cli("SET visits 41")).toBe("OK");

    const res = await alice.api.post(`/api/pods/${third}/backups`, { note: "self-run redis" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const done = await settled(third, res.body.id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect(done.verified_at).toBeTruthy();
    const { bytes } = await download(third, res.body.id);
    const file = path.join(work, "self.tar.gz");
    await writeFile(file, bytes);
    const members = (await run("tar", ["-tzf", file])).stdout.split("\n");
    expect(members).toContain("databases/self-redis-6390.rdb");

    expect(await cli("SET visits 99")).toBe("OK");
    expect(await cli("SET later 1")).toBe("OK");
    const restore = await alice.api.post(`/api/pods/${third}/backups/${res.body.id}/restore`);
    expect(restore.status, JSON.stringify(restore.body)).toBe(202);
    const event = await eventOf(third, ["restore_completed", "restore_failed"]);
    expect(event.type, JSON.stringify(event)).toBe("restore_completed");
    expect(await cli("GET visits")).toBe("41");
    expect(await cli("EXISTS later")).toBe("0");
  });

  it("refuses an import that is not a gzip tar, and another team's backups are not found", async () => {
    const junk = path.join(work, "junk.tar.gz");
    await writeFile(junk, "this is not a gzip stream");
    const res = await importFile(second, junk, "junk");
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatch(/gzip|tar/i);

    const mallory = await signUp(stack.api, "Mallory");
    for (const p of [`/api/pods/${first}/backups`, `/api/pods/${first}/backups/${backupId}`]) {
      expect((await mallory.api.get(p)).status).toBe(404);
    }
    const dl = await fetch(`${stack.api}/api/pods/${first}/backups/${backupId}/download`, {
      headers: { authorization: `Bearer ${mallory.token}` },
    });
    expect(dl.status).toBe(404);
    expect((await mallory.api.post(`/api/pods/${first}/backups/${backupId}/restore`)).status).toBe(404);
  });

  it(`streams a ${IMPORT_MB} MB import with the Worker's and the agent's memory flat`, {
    timeout: 600_000,
  }, async () => {
    const workerPid = await pidListening(new URL(stack.api).port);
    const agentPid = stack.agent.child.pid as number;
    /** an import of `bytes` of random data (gzip level 0: that many bytes on the wire), RSS sampled */
    const measured = async (bytes: number) => {
      const file = await makeArchive(work, second, bytes);
      const size = (await stat(file)).size;
      const before = { worker: await rssMb(workerPid), agent: await rssMb(agentPid) };
      const peak = { ...before };
      const sampler = setInterval(async () => {
        peak.worker = Math.max(peak.worker, await rssMb(workerPid).catch(() => 0));
        peak.agent = Math.max(peak.agent, await rssMb(agentPid).catch(() => 0));
      }, 200);
      try {
        const started = Date.now();
        const res = await importFile(second, file, `${bytes} bytes`).catch(async (error: unknown) => {
          // a cut upload says how far it got and whether workerd lived through it
          const worker = await rssMb(workerPid).then(
            (mb) => `alive, ${mb} MB`,
            () => "gone",
          );
          throw new Error(
            `${String(error)}\nafter ${Date.now() - started} ms; workerd ${worker}, peak ${JSON.stringify(peak)}`,
          );
        });
        expect(res.status, JSON.stringify(res.body)).toBe(202);
        const uploaded = Date.now();
        const done = await settled(second, res.body.id);
        console.log(
          `import of ${bytes} bytes: upload ${uploaded - started} ms, then settled in ${Date.now() - uploaded} ms`,
        );
        expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", size });
      } finally {
        clearInterval(sampler);
        await rm(file, { force: true });
      }
      return { worker: peak.worker - before.worker, agent: peak.agent - before.agent, before, peak };
    };
    // The first import brings workerd (the Worker, local R2 and D1 in one process) to its working
    // size; what a 4× larger one adds after it is what grows with the bytes.
    const quarter = await measured((IMPORT_MB / 4) * 1024 ** 2);
    const whole = await measured(IMPORT_MB * 1024 ** 2);
    console.log(
      `imports: ${IMPORT_MB / 4} MB → Worker (workerd) +${quarter.worker} MB, agent +${quarter.agent} MB; ` +
        `${IMPORT_MB} MB → Worker +${whole.worker} MB (${whole.before.worker} → ${whole.peak.worker}), agent +${whole.agent} MB (${whole.before.agent} → ${whole.peak.agent})`,
    );
    expect(whole.worker).toBeLessThan(Math.max(quarter.worker, 0) + 64);
    expect(whole.worker).toBeLessThan(256);
    expect(whole.agent).toBeLessThan(64);
  });
});

/** A backup archive holding `bytes` of random data, gzip level 0 (stored blocks): fast to make. */
async function makeArchive(work: string, pod: string, bytes: number): Promise<string> {
  const file = path.join(work, `import-${bytes}.tar.gz`);
  const payload = path.join(work, `payload-${bytes}`);
  await run("mkdir", ["-p", path.join(payload, "app")]);
  await writeFile(
    path.join(payload, "podhost-backup.json"),
    JSON.stringify({
      format: 1,
      pod,
      preset: "nodejs",
      created_at: new Date().toISOString(),
      databases: [],
      excluded: [],
    }),
  );
  await writeRandom(path.join(payload, "app", "blob.bin"), bytes);
  const tar = spawn("tar", ["-C", payload, "-cf", "-", "podhost-backup.json", "app"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const out = createWriteStream(file);
  await new Promise<void>((resolve, reject) => {
    tar.stdout.pipe(createGzip({ level: 0 })).pipe(out);
    out.on("finish", () => resolve());
    out.on("error", reject);
    tar.on("error", reject);
  });
  await rm(payload, { recursive: true, force: true });
  return file;
}

async function writeRandom(file: string, bytes: number) {
  const out = createWriteStream(file);
  const chunk = 4 * 1024 * 1024;
  for (let done = 0; done < bytes; done += chunk) {
    if (!out.write(randomBytes(Math.min(chunk, bytes - done)))) {
      await new Promise<void>((r) => out.once("drain", () => r()));
    }
  }
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** the process listening on a loopback port (the Worker's workerd) */
async function pidListening(port: string): Promise<number> {
  const { stdout } = await run("ss", ["-ltnpH", `sport = :${port}`]);
  const pid = Number(/pid=(\d+)/.exec(stdout)?.[1]);
  if (!pid) throw new Error(`no process listens on ${port}: ${stdout}`);
  return pid;
}
