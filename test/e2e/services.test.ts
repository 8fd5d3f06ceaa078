import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, signUp } from "./support/api";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * Database services end to end (docs/services.md): the public API of the Worker in workerd, the
 * pod-service workflow, the agent making the sidecars on the real Docker engine, and the pod's own
 * network reaching them on 127.0.0.1 with the credentials the API gives.
 *
 * The pod images have no database clients and no registry access, so PostgreSQL and MariaDB are
 * spoken to by their own CLI in a throwaway container of the service image joined to the pod
 * container's network namespace (`--network container:<pod>`): the same 127.0.0.1 the app sees.
 * Redis is spoken to from the app container itself, RESP over a socket with node, through
 * `POST /api/pods/{name}/exec`. One stack, one Build pod with all three services, one Launch pod.
 */

const APP = "svc-app";
const SMALL = "svc-small";
const IMAGES = { postgresql: "podhost/postgresql:14", mysql: "podhost/mariadb:10.11" } as const;

interface Credentials {
  service_type: string;
  status: string;
  host: string;
  port: number;
  username?: string;
  password: string;
  database?: string;
}

describe("database services end to end", () => {
  let stack: Stack;
  let api: ApiClient;
  const creds: Record<string, Credentials> = {};
  const bodies: string[] = [];

  /** a client's CLI in the pod's network namespace, the password and the statements on stdin */
  const sql = (type: "postgresql" | "mysql", c: Credentials, statements: string, pod = APP) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const client =
        type === "postgresql"
          ? `read -r pw; PGPASSWORD=$pw exec psql -X -q -At -v ON_ERROR_STOP=1 -h ${c.host} -p ${c.port} -U ${c.username} -d ${c.database}`
          : `read -r pw; MYSQL_PWD=$pw exec mariadb --no-defaults --skip-ssl -N -h ${c.host} -P ${c.port} -u ${c.username} ${c.database}`;
      const child = spawn(
        "docker",
        [
          "run",
          "--rm",
          "-i",
          "--label",
          `podhost.prefix=${stack.prefix}`,
          "--network",
          `container:${stack.prefix}-${pod}`,
          "--user",
          "1000:1000",
          "--cap-drop",
          "ALL",
          "--security-opt",
          "no-new-privileges",
          IMAGES[type],
          "/bin/bash",
          "-c",
          client,
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
      child.stdin.end(`${c.password}\n${statements}\n`);
    });

  /** a command in the app container through the API, as the tenant would run it */
  const exec = async (script: string) => {
    const res = await api.post(`/api/pods/${APP}/exec`, { command: ["bash", "-c", script], timeout_s: 30 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { exit_code: number | null; stdout: string; stderr: string };
  };

  /** Redis commands from node in the app container: RESP over 127.0.0.1 */
  const redis = (commands: string[][]) =>
    exec(`node -e '
const s = require("net").connect(${creds.redis?.port ?? 6379}, "127.0.0.1");
const cmds = JSON.parse(process.argv[1]);
s.write(cmds.map((c) => "*" + c.length + "\\r\\n" + c.map((a) => "$" + Buffer.byteLength(a) + "\\r\\n" + a + "\\r\\n").join("")).join(""));
let out = ""; s.on("data", (d) => { out += d; if (out.split("\\r\\n").length > cmds.length) { console.log(out.trim()); s.end(); } });
s.on("error", (e) => { console.log("ERR " + e.code); });
setTimeout(() => { console.log(out.trim() || "TIMEOUT"); process.exit(0); }, 3000).unref();
' '${JSON.stringify(commands)}'`);

  const listed = async () => {
    const res = await api.get(`/api/pods/${APP}/services`);
    expect(res.status).toBe(200);
    bodies.push(JSON.stringify(res.body));
    return res.body as { service_type: string; status: string; version: string; port: number }[];
  };

  beforeAll(async () => {
    stack = await startStack("svc");
    api = (await signUp(stack.api)).api;
    await waitForHostOnline(api);
    const app = await api.post("/api/pods", { name: APP, preset: "nodejs", plan_slug: "build" });
    expect(app.status, JSON.stringify(app.body)).toBe(202);
    const small = await api.post("/api/pods", { name: SMALL, preset: "static" });
    expect(small.status, JSON.stringify(small.body)).toBe(202);
    await waitForPodStatus(api, APP, "running", 120_000);
    await waitForPodStatus(api, SMALL, "running", 120_000);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
  }, 120_000);

  it("403 on the Launch plan, 400 for an unknown type, [] when none", async () => {
    const refused = await api.post(`/api/pods/${SMALL}/services`, { service_type: "postgresql" });
    expect(refused.status).toBe(403);
    expect((await api.post(`/api/pods/${APP}/services`, { service_type: "mongodb" })).status).toBe(400);
    expect(await listed()).toEqual([]);
  });

  it("installs PostgreSQL, MariaDB and Redis: 202 installing, then running with the servers' versions", async () => {
    for (const type of ["postgresql", "mysql", "redis"]) {
      const res = await api.post(`/api/pods/${APP}/services`, { service_type: type });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body).toMatchObject({
        pod_name: APP,
        service_type: type,
        status: "installing",
        host: "127.0.0.1",
      });
      bodies.push(JSON.stringify(res.body));
    }
    expect((await api.post(`/api/pods/${APP}/services`, { service_type: "redis" })).status).toBe(409);
    const services = await waitFor(
      "the three services to run",
      async () => {
        const all = await listed();
        if (all.some((s) => s.status === "error")) throw new Error(JSON.stringify(all));
        return all.length === 3 && all.every((s) => s.status === "running") ? all : undefined;
      },
      180_000,
    );
    const byType = Object.fromEntries(services.map((s) => [s.service_type, s]));
    expect(byType.postgresql).toMatchObject({ port: 5432, version: expect.stringMatching(/^14\./) });
    // `mysql` is MariaDB: its server reports 10.11.x, not the spec's 8.0 (docs/services.md)
    expect(byType.mysql).toMatchObject({ port: 3306, version: expect.stringContaining("10.11") });
    expect(byType.redis).toMatchObject({ port: 6379, version: expect.stringMatching(/^7\./) });

    for (const type of ["postgresql", "mysql", "redis"]) {
      const res = await api.get(`/api/pods/${APP}/services/${type}/credentials`);
      expect(res.status).toBe(200);
      creds[type] = res.body;
      expect(res.body.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    }
    expect(creds.postgresql).toMatchObject({ host: "127.0.0.1", username: "pod_user", database: "pod_user" });
    expect(creds.redis?.username).toBeUndefined();
  }, 240_000);

  it("the pod writes and reads rows with the credentials from the API; a wrong password is refused", async () => {
    const pg = creds.postgresql as Credentials;
    const written = await sql(
      "postgresql",
      pg,
      "CREATE TABLE notes (id int PRIMARY KEY, body text); INSERT INTO notes VALUES (1, 'hello pg'); SELECT body FROM notes;",
    );
    expect(written).toEqual({ code: 0, out: "hello pg" });
    const wrong = await sql("postgresql", { ...pg, password: "not-the-password-0123456789" }, "SELECT 1;");
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toContain("password authentication failed");

    const my = creds.mysql as Credentials;
    const mine = await sql(
      "mysql",
      my,
      "CREATE TABLE notes (id int PRIMARY KEY, body text); INSERT INTO notes VALUES (1, 'hello maria'); SELECT body FROM notes;",
    );
    expect(mine).toEqual({ code: 0, out: "hello maria" });

    const r = await redis([
      ["AUTH", creds.redis?.password ?? ""],
      ["SET", "greeting", "hello redis"],
      ["GET", "greeting"],
    ]);
    expect(r.stdout).toContain("+OK\r\n+OK\r\n$11\r\nhello redis");
    const noAuth = await redis([["GET", "greeting"]]);
    expect(noAuth.stdout).toContain("NOAUTH");

    // the other pod (another network namespace) does not reach them
    const other = await sql("postgresql", pg, "SELECT 1;", SMALL);
    expect(other.code).not.toBe(0);
  }, 120_000);

  it("stop shows the services stopped; after start the rows are still there", async () => {
    expect((await api.post(`/api/pods/${APP}/stop`)).body.status).toBe("stopped");
    expect((await listed()).map((s) => s.status)).toEqual(["stopped", "stopped", "stopped"]);
    expect((await api.get(`/api/pods/${APP}/services/postgresql/credentials`)).body.status).toBe("stopped");
    expect((await api.post(`/api/pods/${APP}/start`)).status).toBe(200);
    await waitForPodStatus(api, APP, "running");
    expect((await listed()).map((s) => s.status)).toEqual(["running", "running", "running"]);
    const pg = await waitFor(
      "PostgreSQL back with its rows",
      async () => {
        const r = await sql("postgresql", creds.postgresql as Credentials, "SELECT body FROM notes;");
        return r.code === 0 ? r : undefined;
      },
      60_000,
    );
    expect(pg.out).toBe("hello pg");
    const my = await waitFor(
      "MariaDB back with its rows",
      async () => {
        const r = await sql("mysql", creds.mysql as Credentials, "SELECT body FROM notes;");
        return r.code === 0 ? r : undefined;
      },
      60_000,
    );
    expect(my.out).toBe("hello maria");
  }, 180_000);

  it("a backup dumps every database first; a restore brings the rows and keys back", async () => {
    // the pod restarted in the test before: Redis answers again first
    await waitFor(
      "Redis back",
      async () => ((await redis([["PING"]])).stdout.includes("NOAUTH") ? true : undefined),
      60_000,
    );
    const made = await api.post(`/api/pods/${APP}/backups`, { note: "three databases" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    const done = await waitFor(
      "the backup to settle",
      async () => {
        const b = (await api.get(`/api/pods/${APP}/backups/${made.body.id}`)).body;
        return b.status !== "in_progress" ? b : undefined;
      },
      240_000,
    );
    // completed only once the test-restore loaded all three dumps into scratch servers
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", verify_error: null });
    expect(done.verified_at).toBeTruthy();

    // change everything, then restore
    expect(
      (
        await sql(
          "postgresql",
          creds.postgresql as Credentials,
          "UPDATE notes SET body = 'changed'; SELECT 1;",
        )
      ).code,
    ).toBe(0);
    expect((await sql("mysql", creds.mysql as Credentials, "DELETE FROM notes; SELECT 1;")).code).toBe(0);
    const auth = ["AUTH", creds.redis?.password ?? ""];
    expect((await redis([auth, ["SET", "greeting", "changed"]])).stdout).toContain("+OK\r\n+OK");

    const restore = await api.post(`/api/pods/${APP}/backups/${made.body.id}/restore`);
    expect(restore.status, JSON.stringify(restore.body)).toBe(202);
    const event = await waitFor(
      "the restore to end",
      async () => {
        const list = (await api.get(`/api/pods/${APP}/events`)).body.events as { type: string }[];
        return list.find((e) => e.type === "restore_completed" || e.type === "restore_failed");
      },
      240_000,
    );
    expect(event.type, JSON.stringify(event)).toBe("restore_completed");
    expect((await sql("postgresql", creds.postgresql as Credentials, "SELECT body FROM notes;")).out).toBe(
      "hello pg",
    );
    expect((await sql("mysql", creds.mysql as Credentials, "SELECT body FROM notes;")).out).toBe(
      "hello maria",
    );
    const back = await waitFor(
      "Redis with the restored key",
      async () => {
        const r = await redis([auth, ["GET", "greeting"]]);
        return r.stdout.includes("hello redis") ? r : undefined;
      },
      60_000,
    );
    expect(back.stdout).toContain("$11\r\nhello redis");
  }, 600_000);

  it("DELETE removes the service: deleted, service_removed, and the port refuses", async () => {
    const res = await api.delete(`/api/pods/${APP}/services/postgresql`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect((await listed()).map((s) => s.service_type).sort()).toEqual(["mysql", "redis"]);
    const probe = await exec(
      `timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' && echo OPEN || echo CLOSED`,
    );
    expect(probe.stdout.trim()).toBe("CLOSED");
    expect((await api.get(`/api/pods/${APP}/services/postgresql/credentials`)).status).toBe(404);

    const events = await api.get(`/api/pods/${APP}/events?limit=100`);
    const types = (events.body.events as { type: string }[]).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["service_install", "service_running", "service_removed"]));
    bodies.push(JSON.stringify(events.body));
    // the passwords appear in the credentials answers only: not in lists, 202s or events
    for (const c of Object.values(creds)) for (const body of bodies) expect(body).not.toContain(c.password);
  }, 120_000);
});
