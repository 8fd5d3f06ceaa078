import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { d1Execute } from "../../scripts/lib/d1";
import { type DnsDouble, startDnsDouble } from "../support/dns";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerExec, dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForHostsPlaceable, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, type TestHost, waitFor } from "./support/stack";

const run = promisify(execFile);
type User = Awaited<ReturnType<typeof signUp>>;

interface Move {
  pod: string;
  status: string;
  to_host: string | null;
  ssh_port: number | null;
  downtime_ms: number | null;
  backup_at: string | null;
  reason: string | null;
}

/**
 * Emptying a host (docs/hosts.md "Emptying a host", issue #28 item 6): two hosts of one region, each
 * a real agent; `npm run host:drain -- <host> --evacuate` moves a static pod with 100 MB of files,
 * its env and a verified custom domain, and a pod with a PostgreSQL service and rows, from one host
 * to the other; `--lost` recreates a dead host's pod from its latest verified backup and says which
 * pod had none. Worker + agents + Docker + nginx + the DNS double.
 */
describe("moving pods off a host", () => {
  let dns: DnsDouble;
  let stack: Stack;
  let alice: User;
  let one: TestHost;
  let two: TestHost;
  const tag = () => stack.prefix.slice(-4);
  const staticName = () => `mvst-${tag()}`;
  const pgName = () => `mvpg-${tag()}`;
  const domainName = () => `www.move-${tag()}.example.com`;

  /**
   * A visitor's request for a pod on `host`: through the edge router in the Worker where the stack
   * has one (docs/edge.md; it routes by the pod's record), else straight to the host's ingress.
   */
  const visit = (host: TestHost, name: string, path = "/") =>
    httpGet((stack as Stack & { edgePort?: number }).edgePort ?? host.ingressPort, name, path);
  const hostDrain = async (host: TestHost, ...flags: string[]) => {
    try {
      const { stdout } = await run(
        "npx",
        [
          "tsx",
          "scripts/host-drain.ts",
          host.name,
          "--persist-to",
          stack.worker.persistDir,
          "--api",
          stack.api,
          ...flags,
        ],
        { timeout: 600_000 },
      );
      return { code: 0, stdout };
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: `${e.stdout ?? ""}${e.stderr ?? ""}` };
    }
  };
  const movesOf = async (host: TestHost): Promise<Move[]> => {
    // the record itself (the script's output is checked on its own)
    return d1Execute<Move>(
      `SELECT pod_name AS pod, status, to_host_id AS to_host, ssh_port, downtime_ms, backup_at, reason FROM pod_moves WHERE from_host_id = '${host.hostId}' ORDER BY created_at`,
      { persistTo: stack.worker.persistDir },
    );
  };
  const psql = (pod: string, prefix: string, password: string, statements: string) =>
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
          `container:${prefix}-${pod}`,
          "--user",
          "1000:1000",
          "podhost/postgresql:14",
          "/bin/bash",
          "-c",
          "read -r pw; PGPASSWORD=$pw exec psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U pod_user -d pod_user",
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
      child.on("close", (code) => resolve({ code, out }));
      child.stdin.end(`${password}\n${statements}\n`);
    });

  beforeAll(async () => {
    dns = await startDnsDouble();
    stack = await startStack("mv", { vars: { DNS_RESOLVER_URL: dns.resolverUrl } });
    one = stack.hosts[0] as TestHost;
    two = await stack.addHost();
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    await waitForHostsPlaceable(stack.api, [one, two], 300_000);
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
    await dns?.close();
  }, 120_000);

  it("the operator API refuses a caller without an operator token", async () => {
    for (const auth of [
      undefined,
      "Bearer nope",
      `Bearer ${one.agentEnv.PODHOST_AGENT_TOKEN}`,
      "Bearer opt_forged",
    ]) {
      const res = await fetch(`${stack.api}/operator/hosts/${one.name}/evacuate`, {
        method: "POST",
        headers: auth ? { authorization: auth } : {},
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toMatch(/operator token/);
    }
  });

  it("--evacuate moves a static pod (100 MB, env, domain) and a PostgreSQL pod with their data; nothing is left on the old host", {
    timeout: 900_000,
  }, async () => {
    const st = staticName();
    const pg = pgName();
    for (const [name, body] of [
      [st, { preset: "static" }],
      [pg, { preset: "nodejs", plan_slug: "build" }],
    ] as const) {
      const res = await alice.api.post("/api/pods", { name, server_id: one.hostId, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    }
    await waitForPodStatus(alice.api, st, "running", 120_000);
    await waitForPodStatus(alice.api, pg, "running", 120_000);
    const before = (await alice.api.get(`/api/pods/${st}`)).body as { ssh_port: number };

    // the static pod: 100 MB that do not compress, a page, an env, a verified custom domain
    await dockerExec(`${one.prefix}-${st}`, [
      "sh",
      "-c",
      "cd app && echo moved-marker > marker.txt && head -c 100000000 /dev/urandom > big.bin && sha256sum big.bin > big.sum",
    ]);
    const sum = (await dockerExec(`${one.prefix}-${st}`, ["cat", "app/big.sum"])).trim();
    expect(
      (await alice.api.put(`/api/pods/${st}/env`, { vars: { GREETING: "hello from one" } })).status,
    ).toBe(200);
    const added = await alice.api.post(`/api/pods/${st}/domains`, { domain: domainName() });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    dns.setTxt(added.body.verification.name, [added.body.verification.value]);
    expect((await alice.api.post(`/api/pods/${st}/domains/${added.body.id}/verify`)).body.status).toBe(
      "verified",
    );
    expect((await visit(one, domainName(), "/marker.txt")).body.trim()).toBe("moved-marker");

    // the PostgreSQL pod: a service with rows
    expect((await alice.api.post(`/api/pods/${pg}/services`, { service_type: "postgresql" })).status).toBe(
      202,
    );
    await waitFor(
      "postgresql to run",
      async () => {
        const list = (await alice.api.get(`/api/pods/${pg}/services`)).body as { status: string }[];
        if (list.some((s) => s.status === "error")) throw new Error(JSON.stringify(list));
        return list[0]?.status === "running" ? true : undefined;
      },
      240_000,
    );
    const password = (await alice.api.get(`/api/pods/${pg}/services/postgresql/credentials`)).body
      .password as string;
    const wrote = await waitFor("the server to take statements", async () => {
      const r = await psql(
        pg,
        one.prefix,
        password,
        "CREATE TABLE IF NOT EXISTS notes (id int PRIMARY KEY, body text); INSERT INTO notes VALUES (1, 'moved with its pod') ON CONFLICT DO NOTHING;",
      );
      return r.code === 0 ? r : undefined;
    });
    expect(wrote.code).toBe(0);

    // files the pre-copy will meet, changed while it runs: one deleted, a directory that becomes a
    // link out of the home
    await dockerExec(`${one.prefix}-${st}`, [
      "sh",
      "-c",
      "cd app && echo bye > gone.txt && mkdir -p d && echo inside > d/f.txt",
    ]);

    // A visitor asking every 100 ms through the edge (routed by the pod's record) while the drain
    // runs: the downtime as seen is the longest span between a good answer and the next one.
    const answers: { at: number; ms: number; good: boolean; what: string }[] = [];
    let visiting = true;
    const visitor = (async () => {
      while (visiting) {
        const at = Date.now();
        const r = await visit(one, `${st}.pods.localhost`, "/marker.txt").catch(
          (e: unknown) => `${e instanceof Error ? e.message : String(e)}`,
        );
        const good = typeof r !== "string" && r.status === 200 && r.body.trim() === "moved-marker";
        const what = typeof r === "string" ? r : `${r.status} ${r.body.slice(0, 60).replace(/\s+/g, " ")}`;
        answers.push({ at, ms: Date.now() - at, good, what });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const draining = hostDrain(one, "--evacuate");
    // a drain that ends before the pre-copy is seen fails the wait at once, with what it printed
    let drainEnded: { code: number; stdout: string } | null = null;
    void draining.then((d) => {
      drainEnded = d;
    });
    // During the pre-copy (the pod still serves on the old host): a file written, with an mtime
    // set back (the delta goes by ctime), one deleted, a name with a newline, links out of the home.
    const precopy = await waitFor(
      "the pre-copy to start",
      async () => {
        const events = JSON.stringify((await alice.api.get(`/api/pods/${st}/events`)).body);
        if (events.includes("while it serves")) return "seen";
        return drainEnded
          ? `the drain ended first: ${JSON.stringify(drainEnded)}; events: ${events}`
          : undefined;
      },
      300_000,
    );
    expect(precopy).toBe("seen");
    await dockerExec(`${one.prefix}-${st}`, [
      "sh",
      "-c",
      [
        "cd app",
        "echo written-during > during.txt",
        "touch -d 2001-01-01 during.txt",
        "rm gone.txt",
        "printf nl > \"$(printf 'new\\nline.txt')\"",
        "rm -r d && ln -s /etc d",
        "ln -s ../../../../.. up",
      ].join(" && "),
    ]);
    const drained = await draining;
    visiting = false;
    await visitor;
    // The pod's downtime as a visitor sees it: the longest span between two good answers that holds
    // an answer that was not the page (the edge's 502 while no host serves it). Spans with no answer
    // at all are the local Worker too busy relaying the pre-copy's bytes to answer in 10 s (one
    // workerd on the loaded 2-core machine): printed, not counted as the pod's downtime.
    let seenDown = 0;
    let lastGood: number | null = null;
    const t0 = answers[0]?.at ?? 0;
    for (const [i, a] of answers.entries()) {
      if (!a.good) continue;
      if (lastGood !== null) {
        const since = lastGood;
        const between = answers.slice(0, i).filter((b) => b.at > since && !b.good);
        const answered = between.some((b) => /^\d{3} /.test(b.what));
        if (answered) seenDown = Math.max(seenDown, a.at - since);
        if (a.at - since > 2_000)
          console.log(
            `visitor: no good answer from +${((since - t0) / 1000).toFixed(1)} s to +${((a.at - t0) / 1000).toFixed(1)} s: ${[...new Set(between.map((b) => b.what))].join(" | ").slice(0, 300)}`,
          );
      }
      lastGood = a.at;
    }
    expect(drained.code, drained.stdout).toBe(0);
    expect(drained.stdout).toMatch(
      new RegExp(`moved ${st} to ${two.name} \\(SSH port \\d+\\): down for [\\d.]+ s`),
    );
    expect(drained.stdout).toMatch(new RegExp(`moved ${pg} to ${two.name}`));
    expect(drained.stdout).toContain("2 of 2 pod(s) moved");

    const moves = await movesOf(one);
    const stMove = moves.find((m) => m.pod === st);
    expect(stMove).toMatchObject({ status: "done", to_host: two.hostId });
    // measured and told, phase by phase; the goal (≤ 10 s) is not met here yet: docs/hosts.md says
    // where the time goes. The bound only catches a move that hangs on the way.
    const told = JSON.stringify((await alice.api.get(`/api/pods/${st}/events`)).body).match(
      /moved from server [^"]*down for ([\d.]+) s \(stop [\d.]+ s, changes sent \(\d+ changed, \d+ removed\) [\d.]+ s, started [\d.]+ s, vhost [\d.]+ s\); its files \([\d.]+ MB\) were copied beforehand in [\d.]+ s while it served/,
    );
    console.log(`static pod with 100 MB: ${told?.[0]}`);
    console.log(
      `static pod with 100 MB: a visitor through the edge saw it down for ${(seenDown / 1000).toFixed(1)} s (goal ≤ 10 s; ${answers.length} visits)`,
    );
    expect(told, "the moved event names the downtime, its phases and the pre-copy").toBeTruthy();
    expect(Number(told?.[1]) * 1000).toBeCloseTo(stMove?.downtime_ms ?? 0, -2);
    // the 100 MB travelled before the stop: the downtime is the delta's and a start's, a few
    // seconds here; the bound leaves room for a loaded machine and still fails the stop-then-copy
    // move of before (72–126 s)
    expect(seenDown).toBeGreaterThan(0);
    expect(seenDown).toBeLessThan(30_000);

    // the static pod: served from the new host under its name and its domain, files, env, SSH port
    const view = (await alice.api.get(`/api/pods/${st}`)).body as {
      server_name: string;
      ssh_port: number;
      status: string;
    };
    expect(view).toMatchObject({ server_name: two.name, status: "running" });
    expect(view.ssh_port).toBe(stMove?.ssh_port);
    expect(view.ssh_port).not.toBe(before.ssh_port);
    expect((await visit(two, `${st}.pods.localhost`, "/marker.txt")).body.trim()).toBe("moved-marker");
    expect((await visit(two, domainName(), "/marker.txt")).body.trim()).toBe("moved-marker");
    expect(
      (await dockerExec(`${two.prefix}-${st}`, ["sh", "-c", "cd app && sha256sum big.bin"])).trim(),
    ).toBe(sum);
    // what changed during the pre-copy arrived, as it was on the old host and nothing more
    expect((await visit(two, `${st}.pods.localhost`, "/during.txt")).body.trim()).toBe("written-during");
    expect((await visit(two, `${st}.pods.localhost`, "/gone.txt")).status).toBe(404);
    const after = await dockerExec(`${two.prefix}-${st}`, [
      "sh",
      "-c",
      "cd app && cat \"$(printf 'new\\nline.txt')\" && echo && readlink d && readlink up && ls -a .. | grep -c pod-move || true",
    ]);
    expect(after.split("\n")).toEqual(["nl", "/etc", "../../../../..", "0", ""]);
    expect((await alice.api.get(`/api/pods/${st}/env`)).body).toMatchObject({
      vars: { GREETING: "hello from one" },
    });
    expect((await alice.api.get(`/api/pods/${st}/domains`)).body).toMatchObject({
      domains: [{ domain: domainName(), status: "verified" }],
    });

    // the PostgreSQL pod: its rows on the new host's server
    const read = await psql(pg, two.prefix, password, "SELECT body FROM notes WHERE id = 1;");
    expect(read, read.out).toMatchObject({ code: 0 });
    expect(read.out.trim()).toBe("moved with its pod");

    // nothing of either is left on the old host; the new host holds both
    for (const pod of [st, pg]) {
      expect(await dockerInspect("container", `${one.prefix}-${pod}`)).toBeNull();
      expect(await dockerInspect("container", `${two.prefix}-${pod}`)).toBeTruthy();
      const events = JSON.stringify((await alice.api.get(`/api/pods/${pod}/events`)).body);
      expect(events).toContain(`moved from server ${one.name} to server ${two.name}`);
    }
    expect((await httpGet(one.ingressPort, `${st}.pods.localhost`)).status).not.toBe(200);
  });

  it("--lost recreates a dead host's pod from its latest verified backup, and says which pod had none", {
    timeout: 900_000,
  }, async () => {
    // the pods are on `two` now, `one` is drained: it takes pods again, and `two` goes away
    expect((await hostDrain(one, "--undo")).code).toBe(0);
    const st = staticName();
    const bare = `mvbare-${tag()}`;
    const res = await alice.api.post("/api/pods", { name: bare, preset: "static", server_id: two.hostId });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitForPodStatus(alice.api, bare, "running", 120_000);
    await dockerExec(`${two.prefix}-${st}`, ["sh", "-c", "echo in-the-backup > app/backed.txt"]);
    const made = await alice.api.post(`/api/pods/${st}/backups`, { note: "before the loss" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    const backup = await waitFor(
      "the backup to complete",
      async () => {
        const b = (await alice.api.get(`/api/pods/${st}/backups/${made.body.id}`)).body;
        return b.status !== "in_progress" ? b : undefined;
      },
      300_000,
    );
    expect(backup).toMatchObject({ status: "completed" });
    // written after the backup: lost with the host, as a backup promises no more
    await dockerExec(`${two.prefix}-${st}`, ["sh", "-c", "echo after > app/after.txt"]);

    // a connected host is evacuated, not declared lost
    const refused = await hostDrain(two, "--lost");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("is connected: evacuate it instead");

    await two.agent.kill();
    await waitFor("the host to count as away", async () =>
      (await alice.api.get(`/api/pods/${st}`)).status === 503 ? true : undefined,
    );
    const lost = await hostDrain(two, "--lost");
    expect(lost.code, lost.stdout).toBe(1); // one pod had no verified backup
    expect(lost.stdout).toContain(`recreated ${st} on ${one.name}`);
    expect(lost.stdout).toContain(`from the backup of ${backup.created_at}`);
    expect(lost.stdout).toContain(`NOT recreated ${bare}: no verified backup`);
    expect(lost.stdout).toMatch(new RegExp(`recreated ${pgName()} on ${one.name}|NOT recreated ${pgName()}`));

    const view = (await alice.api.get(`/api/pods/${st}`)).body as { server_name: string; status: string };
    expect(view).toMatchObject({ server_name: one.name, status: "running" });
    expect((await visit(one, `${st}.pods.localhost`, "/backed.txt")).body.trim()).toBe("in-the-backup");
    expect((await visit(one, `${st}.pods.localhost`, "/after.txt")).status).toBe(404);
    expect((await visit(one, domainName(), "/backed.txt")).body.trim()).toBe("in-the-backup");
    const events = JSON.stringify((await alice.api.get(`/api/pods/${st}/events`)).body);
    expect(events).toContain(`from the backup of ${backup.created_at}`);
    const bareEvents = JSON.stringify((await alice.api.get(`/api/pods/${bare}/events`)).body);
    expect(bareEvents).toContain("has no verified backup: it was not recreated");
  });
});
