import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { createDb } from "../../worker/db/client";
import { type AuditEventRow, auditEvents } from "../../worker/db/schema";
import type { AppEnv } from "../../worker/http/app-env";
import { auditTrail } from "../../worker/http/audit-trail";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { ROUTE_ACTIONS, UNAUDITED_ROUTES } from "../../worker/services/audit/actions";
import type { Caller } from "../../worker/services/auth/caller";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, PASSWORD, registerUser, sessionCookie, type TestUser, uniqueEmail } from "./support/client";
import { BASE, connect } from "./support/connectors";
import { db } from "./support/db";
import { documentedOperations } from "./support/openapi";
import { invite, teamFixture } from "./support/teams";

/**
 * The audit log (docs/audit.md): what each kind of change records (actor, credential, IP, target,
 * action, outcome), names and argv but never values or output, bounded text, the owner-only
 * `GET /api/teams/{id}/audit` with its filters and cursor, the cron's retention, and what recording
 * costs a request. Rows are written in `waitUntil`, so tests wait for them (`rowsOf`).
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser, ip?: string) => ({ token: user.token, ...(ip ? { ip } : {}) });

/** The team's rows matching `where`, once `count` of them are there (the write follows the response). */
async function rowsOf(teamId: string, action: string, count = 1): Promise<AuditEventRow[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.teamId, teamId), eq(auditEvents.action, action)));
    if (rows.length >= count || Date.now() > deadline) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function onlinePod(teamId: string) {
  const host = await insertHost();
  const pod = await insertPod({ hostId: host.id, teamId, status: "running" });
  const { agent } = await FakeAgent.online(host, [{ name: pod.name, state: "running", ip: "172.30.0.2" }]);
  return { agent, pod };
}

const auditPage = (user: TestUser, teamId: string, query = "") =>
  call("GET", `/api/teams/${teamId}/audit${query}`, undefined, { token: user.token });

describe("what a change records", () => {
  it("a session's change on a team: the actor, credential kind, IP, team, target, action and outcome", async () => {
    const { owner, team } = await teamFixture();
    const res = await call(
      "PUT",
      `/api/teams/${team.id}`,
      { name: "Renamed Team" },
      as(owner, "203.0.113.7"),
    );
    expect(res.status).toBe(200);
    const [row] = await rowsOf(team.id, "team.rename");
    expect(row).toMatchObject({
      teamId: team.id,
      actorId: owner.user.id,
      actorEmail: owner.user.email,
      credential: "session",
      credentialLabel: null,
      ip: "203.0.113.7",
      target: "Renamed Team",
      outcome: "ok",
      status: 200,
    });
    expect(Date.now() - Date.parse(row?.at ?? "")).toBeLessThan(60_000);
  });

  it("an API token's exec records its prefix and the argv, never the command's output", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const created = await call("POST", "/api/api-tokens", { name: "ci" }, as(owner));
    expect(created.status).toBe(201);
    const { agent, pod } = await onlinePod(teamId);
    const exec = call(
      "POST",
      `/api/pods/${pod.name}/exec`,
      { command: ["sh", "-c", "cat /etc/secret"] },
      { token: created.body.token, ip: "198.51.100.4" },
    );
    agent.ok(await agent.next("control:call"), {
      exitCode: 0,
      stdout: "OUTPUT-NOT-FOR-THE-LOG",
      stderr: "",
      durationMs: 1,
      timedOut: false,
    });
    expect((await exec).status).toBe(200);
    const [row] = await rowsOf(teamId, "exec.run");
    expect(row).toMatchObject({
      credential: "api_token",
      credentialLabel: created.body.prefix,
      pod: pod.name,
      ip: "198.51.100.4",
      outcome: "ok",
    });
    expect(JSON.parse(row?.detail ?? "{}")).toEqual({ argv: ["sh", "-c", "cat /etc/secret"] });
    expect(JSON.stringify(row)).not.toContain("OUTPUT-NOT-FOR-THE-LOG");
    // the token's own creation is in the log too, made with the session
    expect((await rowsOf(teamId, "api_token.create"))[0]).toMatchObject({
      credential: "session",
      target: "ci",
    });
  });

  it("env changes record the keys' names, never their values", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const { agent, pod } = await onlinePod(teamId);
    const set = call(
      "PUT",
      `/api/pods/${pod.name}/env`,
      { vars: { DATABASE_URL: "postgres://u:VALUE-SECRET@db/x", MODE: "VALUE-PLAIN" } },
      as(owner),
    );
    agent.fail(await agent.next("control:call"), "unavailable");
    await set;
    const unset = call("DELETE", `/api/pods/${pod.name}/env`, { keys: ["MODE"] }, as(owner));
    agent.fail(await agent.next("control:call"), "unavailable");
    await unset;
    const [setRow] = await rowsOf(teamId, "env.set");
    const [unsetRow] = await rowsOf(teamId, "env.unset");
    expect(JSON.parse(setRow?.detail ?? "{}")).toEqual({ keys: ["DATABASE_URL", "MODE"] });
    expect(JSON.parse(unsetRow?.detail ?? "{}")).toEqual({ keys: ["MODE"] });
    expect(JSON.stringify([setRow, unsetRow])).not.toMatch(/VALUE-SECRET|VALUE-PLAIN/);
  });

  it("an invitation accepted signed out (the invitation page) records the account it made or signed in; a failed attempt records nothing", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    // a new account: registered, joined and signed in by the accept itself
    const email = uniqueEmail("invitee");
    const inv = await invite(owner, team.id, email);
    const joined = await call(
      "POST",
      "/api/invitations/accept",
      { token: inv.token, email, name: "Invitee", password: PASSWORD },
      { ip: "198.51.100.23" },
    );
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    const [row] = await rowsOf(team.id, "invitation.accept");
    const who = await call("GET", "/api/auth/user", undefined, { cookie: sessionCookie(joined) });
    expect(row).toMatchObject({
      teamId: team.id,
      actorId: who.body.id,
      actorEmail: email,
      credential: "session",
      ip: "198.51.100.23",
      outcome: "ok",
      status: 200,
    });
    // attacker: a wrong password for an existing account joins nothing and writes nothing into the
    // team's log (a stranger cannot fill it from outside)
    const second = await invite(owner, team.id, outsider.user.email);
    const refused = await call("POST", "/api/invitations/accept", {
      token: second.token,
      email: outsider.user.email,
      name: "Outsider",
      password: "not the password at all",
    });
    expect(refused.status).toBe(401);
    // the right one: an existing account signed in by the accept
    const accepted = await call("POST", "/api/invitations/accept", {
      token: second.token,
      email: outsider.user.email,
      name: "Outsider",
      password: PASSWORD,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const rows = await rowsOf(team.id, "invitation.accept", 2);
    expect(rows.map((r) => [r.actorId, r.outcome])).toEqual([
      [who.body.id, "ok"],
      [outsider.user.id, "ok"],
    ]);
  });

  it("a failed change records its outcome and status", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const { status } = await call("DELETE", "/api/pods/no-such-pod-here", undefined, as(owner));
    expect(status).toBe(404);
    expect((await rowsOf(teamId, "pod.delete"))[0]).toMatchObject({
      pod: "no-such-pod-here",
      outcome: "error",
      status: 404,
    });
  });

  it("a connector: its grant at consent, its REST calls and its MCP tools record the client's name", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const connected = await connect(owner, "Audit Assistant");
    const [grant] = await rowsOf(teamId, "connector.grant");
    expect(grant).toMatchObject({ credential: "session", target: "Audit Assistant", outcome: "ok" });

    const rest = await call("POST", "/api/pods/no-such-pod/stop", undefined, {
      token: connected.accessToken,
    });
    expect(rest.status).toBe(404);
    expect((await rowsOf(teamId, "pod.stop"))[0]).toMatchObject({
      credential: "connector",
      credentialLabel: "Audit Assistant",
      outcome: "error",
    });

    const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
      fetch: (url, init) => exports.default.fetch(new Request(url, init)),
      requestInit: {
        headers: { authorization: `Bearer ${connected.accessToken}`, "cf-connecting-ip": "192.0.2.9" },
      },
    });
    const client = new Client({ name: "audit-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      await client.callTool({ name: "list_pods", arguments: {} });
      const result = await client.callTool({
        name: "set_env",
        arguments: { name: "no-such-pod", vars: { TOKEN: "MCP-VALUE" } },
      });
      expect(result.isError).toBe(true);
    } finally {
      await client.close();
    }
    const [tool] = await rowsOf(teamId, "env.set");
    expect(tool).toMatchObject({
      credential: "connector",
      credentialLabel: "Audit Assistant",
      ip: "192.0.2.9",
      pod: "no-such-pod",
      outcome: "error",
      status: 404,
    });
    expect(JSON.parse(tool?.detail ?? "{}")).toEqual({ keys: ["TOKEN"] });
    expect(tool?.detail).not.toContain("MCP-VALUE");
    // a read-only tool changes nothing and records nothing
    const all = await db.select().from(auditEvents).where(eq(auditEvents.teamId, teamId));
    expect(all.map((r) => r.action).sort()).toEqual(["connector.grant", "env.set", "pod.stop"]);
  });

  it("bounds what a tenant typed: a long argv is cut with a marker", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const argv = ["echo", ...Array.from({ length: 200 }, (_, i) => `${i}`.padEnd(1000, "x"))];
    await call("POST", "/api/pods/no-such-pod/exec", { command: argv }, as(owner));
    const [row] = await rowsOf(teamId, "exec.run");
    const stored = JSON.parse(row?.detail ?? "{}").argv as string[];
    expect((row?.detail ?? "").length).toBeLessThan(3_000);
    expect(stored[0]).toBe("echo");
    expect(stored[1]).toMatch(/^0x+…\[truncated\]$/);
    expect(stored.at(-1)).toMatch(/^…\[truncated\] \d+ more$/);
  });
});

describe("every change is mapped", () => {
  it("each POST, PUT, PATCH and DELETE of /openapi.json is an audited action or named as unaudited, and no entry is stale", async () => {
    const documented = (await documentedOperations())
      .filter((op) => ["POST", "PUT", "PATCH", "DELETE"].includes(op.method.toUpperCase()))
      .map((op) => `${op.method.toUpperCase()} ${op.path}`);
    const unmapped = documented.filter((key) => !(key in ROUTE_ACTIONS) && !(key in UNAUDITED_ROUTES));
    expect(documented.length).toBeGreaterThan(50);
    expect(unmapped).toEqual([]);
    const stale = [...Object.keys(ROUTE_ACTIONS), ...Object.keys(UNAUDITED_ROUTES)].filter(
      (key) => !documented.includes(key),
    );
    expect(stale).toEqual([]);
  });
});

describe("GET /api/teams/{id}/audit", () => {
  it("is the owner's: a member gets 403, another team's owner 404, and their attempts stay out of the log", async () => {
    const { owner, member, team, outsider } = await teamFixture({ outsider: true });
    expect((await auditPage(member, team.id)).status).toBe(403);
    expect((await auditPage(outsider, team.id)).status).toBe(404);
    // An owner's API token made on another team does not reach this one either.
    const elsewhere = await call("POST", "/api/api-tokens", { name: "personal" }, as(owner));
    expect((await auditPage({ ...owner, token: elsewhere.body.token }, team.id)).status).toBe(404);

    // A stranger's change attempted on the team (404, and a 400 that fails validation first) is
    // recorded in the stranger's own log, never written into the team's.
    expect((await call("PUT", `/api/teams/${team.id}`, { name: "Hijacked" }, as(outsider))).status).toBe(404);
    expect((await call("PUT", `/api/teams/${team.id}`, { name: "" }, as(outsider))).status).toBe(400);
    const theirs = await rowsOf(outsider.user.active_team_id, "team.rename", 2);
    expect(theirs.map((r) => r.status).sort()).toEqual([400, 404]);
    const page = await auditPage(owner, team.id, "?action=team.rename");
    expect(page.status).toBe(200);
    expect(page.body.events).toEqual([]);
    // and the outsider's own log does not show the team's changes
    await call("PUT", `/api/teams/${team.id}`, { name: "Owner's Name" }, as(owner));
    await rowsOf(team.id, "team.rename");
    const own = await auditPage(outsider, outsider.user.active_team_id, "?limit=200");
    expect(own.body.events.every((e: { actor: { id: string } }) => e.actor.id === outsider.user.id)).toBe(
      true,
    );
  });

  it("pages newest first with a stable cursor, and filters by actor, pod, action and time", async () => {
    const owner = await registerUser();
    const teamId = owner.user.active_team_id;
    const base = Date.parse("2026-01-10T00:00:00.000Z");
    const rows: AuditEventRow[] = Array.from({ length: 25 }, (_, i) => ({
      id: newId("aud"),
      teamId,
      // two rows share each time: the id breaks the tie
      at: new Date(base + Math.floor(i / 2) * 60_000).toISOString(),
      actorId: i % 5 === 0 ? "usr_other" : owner.user.id,
      actorEmail: i % 5 === 0 ? "other@example.test" : owner.user.email,
      credential: "session",
      credentialLabel: null,
      ip: null,
      action: i % 3 === 0 ? "pod.delete" : "file.write",
      pod: i % 2 === 0 ? "alpha" : "beta",
      target: null,
      outcome: "ok",
      status: 200,
      detail: null,
    }));
    for (const row of rows) await db.insert(auditEvents).values(row);
    const expected = [...rows].sort((a, b) =>
      a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1,
    );

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await auditPage(owner, teamId, `?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.events.map((e: { id: string }) => e.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expected.map((r) => r.id));

    const ids = async (query: string) =>
      ((await auditPage(owner, teamId, `?limit=200&${query}`)).body.events as { id: string }[]).map(
        (e) => e.id,
      );
    const want = (keep: (r: AuditEventRow) => boolean) => expected.filter(keep).map((r) => r.id);
    expect(await ids("actor=usr_other")).toEqual(want((r) => r.actorId === "usr_other"));
    expect(await ids("actor=other@example.test")).toEqual(want((r) => r.actorId === "usr_other"));
    expect(await ids("pod=alpha")).toEqual(want((r) => r.pod === "alpha"));
    expect(await ids("action=pod.delete")).toEqual(want((r) => r.action === "pod.delete"));
    const since = new Date(base + 3 * 60_000).toISOString();
    const until = "2026-01-10T00:08:00Z";
    expect(await ids(`since=${since}&until=${until}`)).toEqual(
      want((r) => r.at >= since && r.at <= "2026-01-10T00:08:00.000Z"),
    );
    expect(await ids("pod=alpha&action=pod.delete")).toEqual(
      want((r) => r.pod === "alpha" && r.action === "pod.delete"),
    );

    for (const bad of ["cursor=nonsense", "since=yesterday", "action=pod.explode", "limit=201"]) {
      const res = await auditPage(owner, teamId, `?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });
});

describe("retention", () => {
  it("the cron deletes rows past the team's retention by its largest plan, and keeps the rest", async () => {
    const [small, large] = await Promise.all([registerUser(), registerUser()]);
    const host = await insertHost();
    const scalePod = await insertPod({
      hostId: host.id,
      teamId: large.user.active_team_id,
      status: "running",
    });
    await env.DB.prepare("UPDATE pods SET plan_slug = 'scale' WHERE id = ?").bind(scalePod.id).run();
    const now = Date.now();
    const row = (teamId: string, ageDays: number): AuditEventRow => ({
      id: newId("aud"),
      teamId,
      at: new Date(now - ageDays * 86_400_000).toISOString(),
      actorId: "usr_x",
      actorEmail: "x@example.test",
      credential: "session",
      credentialLabel: null,
      ip: null,
      action: "pod.start",
      pod: null,
      target: `${ageDays}`,
      outcome: "ok",
      status: 200,
      detail: null,
    });
    const smallTeam = small.user.active_team_id;
    const largeTeam = large.user.active_team_id;
    for (const r of [
      row(smallTeam, 29),
      row(smallTeam, 31),
      row(largeTeam, 31),
      row(largeTeam, 179),
      row(largeTeam, 181),
    ])
      await db.insert(auditEvents).values(r);

    await runScheduledJobs(
      env,
      now,
      scheduledJobs.filter((j) => j.name === "audit-retention"),
    );
    const kept = async (teamId: string) =>
      (await db.select().from(auditEvents).where(eq(auditEvents.teamId, teamId))).map((r) => r.target).sort();
    expect(await kept(smallTeam)).toEqual(["29"]);
    expect(await kept(largeTeam)).toEqual(["179", "31"]);
  });
});

describe("cost", () => {
  it("recording adds at most 1 ms to a request (the write is in waitUntil)", async () => {
    // What a request pays is the work before its answer: finding the route's entry, building the
    // row and handing the write to waitUntil. The write itself runs after the answer; here it goes
    // to a D1 double that answers at once, so that its completions (events that move workerd's
    // clock) do not land inside the timed bursts. Real writes are what every other test checks.
    const written: unknown[][] = [];
    const statement = (params: unknown[] = []) => ({
      bind: (...p: unknown[]) => statement(p),
      run: async () => {
        written.push(params);
        return { success: true, meta: { changes: 1 }, results: [] };
      },
      all: async () => ({ success: true, meta: {}, results: [] }),
      raw: async () => [],
      first: async () => null,
    });
    const doubleDb = createDb({
      prepare: () => statement(),
      batch: async (s: unknown[]) => s.map(() => ({ success: true, meta: {}, results: [] })),
    } as unknown as D1Database);
    const owner = await registerUser();
    const caller: Caller = {
      user: { ...owner.user, created_at: "" } as unknown as Caller["user"],
      teamId: owner.user.active_team_id,
      via: "api_token",
      credentialLabel: "ipk_bench",
    };
    const app = (audited: boolean) => {
      const a = new Hono<AppEnv>();
      a.use("*", async (c, next) => {
        c.set("db", doubleDb);
        c.set("caller", caller);
        await next();
      });
      if (audited) a.use("/api/*", auditTrail);
      // a handler that costs nothing, so what is measured is the recording
      a.post("/api/pods/:name/start", (c) => c.json({ status: "ok" }));
      return a;
    };
    const withAudit = app(true);
    const without = app(false);
    const ctx = createExecutionContext();
    // workerd's clock moves only between events: a timer's turn reads the time after the work
    const tick = async () => {
      await new Promise((r) => setTimeout(r, 0));
      return performance.now();
    };
    const burst = async (a: Hono<AppEnv>, n: number) => {
      const started = await tick();
      for (let i = 0; i < n; i++) {
        const res = await a.request("/api/pods/bench-pod/start", { method: "POST" }, env, ctx);
        if (res.status !== 200) throw new Error(`answered ${res.status}`);
      }
      return (await tick()) - started;
    };
    const ROUNDS = 10;
    const PER_ROUND = 100;
    const N = ROUNDS * PER_ROUND;
    // warmed up first: the first calls of any code path pay for its compilation
    await burst(withAudit, PER_ROUND);
    await burst(without, PER_ROUND);
    written.length = 0;
    let audited = 0;
    let plain = 0;
    // interleaved rounds, so the machine's load falls on both alike
    for (let round = 0; round < ROUNDS; round++) {
      audited += await burst(withAudit, PER_ROUND);
      plain += await burst(without, PER_ROUND);
    }
    await waitOnExecutionContext(ctx);
    const added = (audited - plain) / N;
    console.log(
      `audit cost over ${N} requests: ${(audited / N).toFixed(3)} ms audited vs ${(plain / N).toFixed(3)} ms plain, ${added.toFixed(3)} ms added per request`,
    );
    expect(audited).toBeGreaterThan(0);
    expect(added).toBeLessThanOrEqual(1);
    // and every audited request handed over its one row
    expect(written).toHaveLength(N);
  });
});
