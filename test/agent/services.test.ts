import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { btrfs } from "../../agent/disk/btrfs";
import { podNames, serviceNames } from "../../agent/docker/naming";
import { appMemoryMb, serviceContainersOf } from "../../agent/services/sidecars";
import { serviceMemoryMb } from "../../agent/services/spec";
import { findPlan } from "../../shared/catalog";
import { testPodDisk } from "../support/pod-disk";
import { type Agent, podSpec, startAgent, until } from "./helpers";

/**
 * Database services of a pod (agent/services/) on the real engine and the host's btrfs: each type
 * installs as a sidecar in the pod's network namespace, the pod reaches it on 127.0.0.1 with the
 * password (and not without), another pod cannot, data lives in a subvolume counted in the pod's
 * disk qgroup, memory is split, data survives stop/start/restart, removal and pod deletion take
 * the sidecars and their data.
 */

const build = findPlan("build");
if (!build) throw new Error("the catalog lacks the build plan");
const limits = { cpu: build.cpu, memoryMb: build.memoryMb, diskGb: build.diskGb, pids: 256 };
const PW = "Pw_test-0123456789abcdefXYZ";

let agent: Agent;
const app = podSpec("svcapp", { limits });
const other = podSpec("svcother", { limits });

/** A command in the pod as pod_user (the exec op, as the API runs it). */
const sh = (pod: string, script: string) =>
  agent.handlers["pod.exec"]({ name: pod, command: ["/bin/bash", "-c", script], timeoutS: 60 }, agent.ctx);

/**
 * A SQL client in the pod's network namespace: a throwaway container of the service image (the
 * pod images have no database clients) joined to the pod container's namespace, as the app is.
 * The password goes on stdin.
 */
async function sql(type: "postgresql" | "mysql", password: string, query: string) {
  const image = agent.config.serviceImages[type];
  const argv =
    type === "postgresql"
      ? "read -r pw; PGPASSWORD=$pw exec psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U pod_user -d pod_user"
      : "read -r pw; MYSQL_PWD=$pw exec mariadb --no-defaults --skip-ssl -N -h 127.0.0.1 -P 3306 -u pod_user pod_user";
  const c = await agent.docker.createContainer({
    Image: image,
    Cmd: ["/bin/bash", "-c", argv],
    User: "1000:1000",
    OpenStdin: true,
    StdinOnce: true,
    Labels: { "podhost.prefix": agent.config.namePrefix },
    HostConfig: {
      NetworkMode: `container:${podNames(agent.config.namePrefix, app.name).container}`,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      AutoRemove: false,
    },
  });
  try {
    const stream = await c.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true });
    const chunks: Buffer[] = [];
    stream.on("data", (b: Buffer) => chunks.push(b));
    await c.start();
    stream.end(`${password}\n${query}\n`);
    const { StatusCode } = (await c.wait()) as { StatusCode: number };
    // multiplexed frames: drop the 8-byte headers
    const raw = Buffer.concat(chunks);
    let out = "";
    for (let i = 0; i + 8 <= raw.length; ) {
      const len = raw.readUInt32BE(i + 4);
      out += raw.subarray(i + 8, i + 8 + len).toString();
      i += 8 + len;
    }
    return { code: StatusCode, out: out.trim() };
  } finally {
    await c.remove({ force: true });
  }
}

/** Redis from inside the pod container itself: RESP over 127.0.0.1:6379 with node (in every image). */
const redis = (pod: string, commands: string[][]) =>
  sh(
    pod,
    `node -e '
const s = require("net").connect(6379, "127.0.0.1");
const cmds = JSON.parse(process.argv[1]);
s.write(cmds.map((c) => "*" + c.length + "\\r\\n" + c.map((a) => "$" + Buffer.byteLength(a) + "\\r\\n" + a + "\\r\\n").join("")).join(""));
let out = ""; s.on("data", (d) => { out += d; if (out.split("\\r\\n").length > cmds.length) { console.log(out.trim()); s.end(); } });
s.on("error", (e) => { console.log("ERR " + e.code); });
setTimeout(() => { console.log(out.trim() || "TIMEOUT"); process.exit(0); }, 3000).unref();
' '${JSON.stringify(commands)}'`,
  );

const memoryOf = async (container: string) =>
  (await agent.docker.getContainer(container).inspect()).HostConfig.Memory ?? 0;

beforeAll(async () => {
  agent = await startAgent();
  await Promise.all([
    agent.handlers["pod.create"](app, agent.ctx),
    agent.handlers["pod.create"](other, agent.ctx),
  ]);
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
});

describe("database services", () => {
  it("installs PostgreSQL 14, MariaDB 10.11 and Redis 7 and reports the versions that run", async () => {
    const [pg, my, rd] = await Promise.all([
      agent.handlers["service.install"](
        { name: app.name, type: "postgresql", password: PW, limits },
        agent.ctx,
      ),
      agent.handlers["service.install"]({ name: app.name, type: "mysql", password: PW, limits }, agent.ctx),
      agent.handlers["service.install"]({ name: app.name, type: "redis", password: PW, limits }, agent.ctx),
    ]);
    expect(pg).toEqual({ version: expect.stringMatching(/^14\.\d+$/), port: 5432 });
    expect(my).toEqual({ version: expect.stringMatching(/^10\.11\.\d+$/), port: 3306 });
    expect(rd).toEqual({ version: expect.stringMatching(/^7\.\d+\.\d+$/), port: 6379 });
    const types = (await serviceContainersOf(agent.docker, agent.config.namePrefix, app.name)).map(
      (s) => s.type,
    );
    expect(types.sort()).toEqual(["mysql", "postgresql", "redis"]);
  }, 120_000);

  it("a retried install adopts its sidecar (same version, data kept)", async () => {
    expect(
      (await sql("postgresql", PW, "create table keep (v int); insert into keep values (7);")).code,
    ).toBe(0);
    const again = await agent.handlers["service.install"](
      { name: app.name, type: "postgresql", password: PW, limits },
      agent.ctx,
    );
    expect(again.port).toBe(5432);
    expect((await sql("postgresql", PW, "select v from keep;")).out).toBe("7");
  }, 60_000);

  it("the pod reaches each on 127.0.0.1 with the password, and not with another", async () => {
    const pg = await sql(
      "postgresql",
      PW,
      "create table t (id int primary key, v text); insert into t values (1, 'one'); select v from t;",
    );
    expect(pg).toEqual({ code: 0, out: "one" });
    expect((await sql("postgresql", "wrong-password-0000", "select 1;")).code).not.toBe(0);
    const my = await sql(
      "mysql",
      PW,
      "create table t (id int primary key, v text); insert into t values (1, 'uno'); select v from t;",
    );
    expect(my).toEqual({ code: 0, out: "uno" });
    expect((await sql("mysql", "wrong-password-0000", "select 1;")).code).not.toBe(0);
    const r = await redis(app.name, [
      ["AUTH", PW],
      ["SET", "k", "v1"],
      ["GET", "k"],
    ]);
    expect(r.stdout).toContain("$2\r\nv1");
    const noAuth = await redis(app.name, [["GET", "k"]]);
    expect(noAuth.stdout).toContain("NOAUTH");
  }, 60_000);

  it("attacker: another pod on the host cannot reach them, and the pod cannot see their files", async () => {
    const ip = (await agent.handlers["pod.inspect"]({ name: app.name }, agent.ctx)).ip;
    expect(ip).toBeTruthy();
    for (const port of [5432, 3306, 6379]) {
      const r = await sh(
        other.name,
        `timeout 3 bash -c 'exec 3<>/dev/tcp/${ip}/${port}' && echo OPEN || echo CLOSED`,
      );
      expect(r.stdout.trim(), `port ${port}`).toBe("CLOSED");
    }
    // the data and the admin sockets are only in the sidecars' own mounts
    const files = await sh(app.name, "ls /var/lib/svc /run/svc 2>&1; ls -d /proc/[0-9]* | wc -l");
    expect(files.stdout).toContain("No such file or directory");
    const ps = await sh(app.name, "ps -eo comm");
    expect(ps.stdout).not.toMatch(/postgres|mariadbd|redis-server/);
  }, 60_000);

  it("keeps each service's data in a subvolume charged to the pod's disk qgroup", async () => {
    const disk = testPodDisk();
    const home = podNames(agent.config.namePrefix, app.name).volume;
    const homeId = (await btrfs(["inspect-internal", "rootid", disk.dirOf(home)])).trim();
    const qgroups = await btrfs(["qgroup", "show", "-pcre", "--raw", disk.root]);
    for (const type of ["postgresql", "mysql", "redis"]) {
      const vol = serviceNames(agent.config.namePrefix, app.name, type).volume;
      expect(await disk.exists(vol)).toBe(true);
      const id = (await btrfs(["inspect-internal", "rootid", disk.dirOf(vol)])).trim();
      const line = qgroups.split("\n").find((l) => l.trim().startsWith(`0/${id} `));
      expect(line, `0/${id}`).toContain(`1/${homeId}`);
    }
  });

  it("splits the plan's memory: each sidecar its share, the app the rest", async () => {
    const MB = 1024 * 1024;
    expect(await memoryOf(podNames(agent.config.namePrefix, app.name).container)).toBe(
      appMemoryMb(limits, 3) * MB,
    );
    expect(await memoryOf(serviceNames(agent.config.namePrefix, app.name, "postgresql").container)).toBe(
      serviceMemoryMb(limits) * MB,
    );
    expect(appMemoryMb(limits, 3) + 3 * serviceMemoryMb(limits)).toBeLessThanOrEqual(limits.memoryMb);
  });

  it("stop stops them, start and restart bring them back with their data", async () => {
    await agent.handlers["pod.stop"]({ name: app.name }, agent.ctx);
    const stopped = await serviceContainersOf(agent.docker, agent.config.namePrefix, app.name);
    expect(stopped.map((s) => s.running)).toEqual([false, false, false]);
    await agent.handlers["pod.start"]({ name: app.name }, agent.ctx);
    expect(
      await until(async () => (await sql("postgresql", PW, "select v from t;")).out === "one", 30_000),
    ).toBe(true);
    await agent.handlers["pod.restart"]({ name: app.name }, agent.ctx);
    expect(await until(async () => (await sql("mysql", PW, "select v from t;")).out === "uno", 30_000)).toBe(
      true,
    );
    const r = await until(async () => {
      const x = await redis(app.name, [
        ["AUTH", PW],
        ["GET", "k"],
      ]);
      return x.stdout.includes("v1") ? x : null;
    }, 30_000);
    expect(r?.stdout).toContain("v1");
  }, 120_000);

  it("refuses an install on a stopped pod (conflict)", async () => {
    await agent.handlers["pod.stop"]({ name: other.name }, agent.ctx);
    await expect(
      agent.handlers["service.install"]({ name: other.name, type: "redis", password: PW, limits }, agent.ctx),
    ).rejects.toMatchObject({ code: "conflict" });
    await agent.handlers["pod.start"]({ name: other.name }, agent.ctx);
  }, 60_000);

  it("remove takes the sidecar and its data, and gives the app its memory back", async () => {
    await agent.handlers["service.remove"]({ name: app.name, type: "redis", limits }, agent.ctx);
    const vol = serviceNames(agent.config.namePrefix, app.name, "redis");
    expect(
      await agent.docker
        .getContainer(vol.container)
        .inspect()
        .catch(() => null),
    ).toBeNull();
    expect(await testPodDisk().exists(vol.volume)).toBe(false);
    expect(await memoryOf(podNames(agent.config.namePrefix, app.name).container)).toBe(
      appMemoryMb(limits, 2) * 1024 * 1024,
    );
    // again: already removed
    expect(
      await agent.handlers["service.remove"]({ name: app.name, type: "redis", limits }, agent.ctx),
    ).toEqual({
      removed: true,
    });
  }, 60_000);

  it("pod.delete removes the sidecars and their data", async () => {
    await agent.handlers["pod.delete"]({ name: app.name }, agent.ctx);
    expect(await serviceContainersOf(agent.docker, agent.config.namePrefix, app.name)).toEqual([]);
    for (const type of ["postgresql", "mysql"]) {
      const n = serviceNames(agent.config.namePrefix, app.name, type);
      expect(await testPodDisk().exists(n.volume)).toBe(false);
      expect(
        await agent.docker
          .getVolume(n.volume)
          .inspect()
          .catch(() => null),
      ).toBeNull();
    }
  }, 60_000);
});
