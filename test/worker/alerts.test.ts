import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { newId, randomToken } from "../../shared/ids";
import { createDb } from "../../worker/db/client";
import {
  ALERT_EVENTS,
  alertDeliveries,
  backups,
  deployments,
  podServices,
  pods,
} from "../../worker/db/schema";
import { redispatchPendingDeliveries } from "../../worker/services/alerts/deliver";
import { alertOnDeployment, alertOnService } from "../../worker/services/alerts/hooks";
import { recordVerified } from "../../worker/services/backups/job";
import { failBackup } from "../../worker/services/backups/records";
import { finishDeployment } from "../../worker/services/git/queue";
import { call, registerUser, type TestUser } from "./support/client";
import { insertPod, mailsTo } from "./support/db";
import { createTeam, teamFixture } from "./support/teams";

/**
 * Alerts (docs/alerts.md): channels CRUD, the test send, the delivery history, signed webhooks with
 * retries, chat webhooks, e-mail by role, URLs refused as imports refuse them, and deploy-failed and
 * backup-failed incidents that fire once and resolve. Webhooks go to the receiver double on
 * 127.0.0.1 (test/support/webhook-receiver.ts; ALLOW_ALERT_LOOPBACK in vitest.config.ts).
 */

const RECEIVER = env.WEBHOOK_RECEIVER_URL;
const db = createDb(env.DB);

interface Received {
  method: string;
  headers: Record<string, string>;
  body: string;
  answered: number;
}

const hookPath = () => `/hooks/${randomToken(16)}`;

async function receivedAt(path: string, count = 1): Promise<Received[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(`${RECEIVER}/__double/received?path=${encodeURIComponent(path)}`);
    const { data } = (await res.json()) as { data: Received[] };
    if (data.length >= count || Date.now() > deadline) return data;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const respond = (path: string, status: number, times: number) =>
  fetch(`${RECEIVER}/__double/respond`, { method: "POST", body: JSON.stringify({ path, status, times }) });

const channelsOf = (teamId: string) => `/api/teams/${teamId}/alerts/channels`;

async function addChannel(owner: TestUser, teamId: string, body: Record<string, unknown>) {
  const res = await call("POST", channelsOf(teamId), body, { token: owner.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; secret?: string; url: string | null };
}

async function deliveries(owner: TestUser, teamId: string, query = "") {
  const res = await call("GET", `/api/teams/${teamId}/alerts/deliveries${query}`, undefined, {
    token: owner.token,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as {
    id: string;
    channel_id: string;
    event: string;
    state: string;
    status: string;
    status_code: number | null;
    attempts: number;
  }[];
}

async function hmacHex(secret: string, text: string) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text));
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function ownerWithTeam() {
  const owner = await registerUser("Olive Owner");
  const team = await createTeam(owner);
  return { owner, team };
}

describe("channels", () => {
  it("creates a webhook channel with its secret shown once, lists, renames, turns off and deletes it", async () => {
    const { owner, team } = await ownerWithTeam();
    const created = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "ops",
      url: `${RECEIVER}${hookPath()}`,
    });
    expect(created.id).toMatch(/^alc_/);
    expect(created.secret).toMatch(/^whsec_/);
    const list = await call("GET", channelsOf(team.id), undefined, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).not.toHaveProperty("secret");
    expect(JSON.stringify(list.body)).not.toContain(created.secret);
    const patched = await call(
      "PATCH",
      `${channelsOf(team.id)}/${created.id}`,
      { name: "on-call", enabled: false },
      { token: owner.token },
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: "on-call", enabled: false });
    const del = await call("DELETE", `${channelsOf(team.id)}/${created.id}`, undefined, {
      token: owner.token,
    });
    expect(del.body).toEqual({ status: "deleted" });
    expect((await call("GET", channelsOf(team.id), undefined, { token: owner.token })).body).toEqual([]);
  });

  it("answers 400 for a webhook without a url, an email channel with one, and an unknown kind", async () => {
    const { owner, team } = await ownerWithTeam();
    const noUrl = await call(
      "POST",
      channelsOf(team.id),
      { kind: "webhook", name: "x" },
      { token: owner.token },
    );
    expect(noUrl.status).toBe(400);
    expect(noUrl.body.error).toContain("url");
    const emailUrl = await call(
      "POST",
      channelsOf(team.id),
      { kind: "email", name: "x", url: "https://example.com/" },
      { token: owner.token },
    );
    expect(emailUrl.status).toBe(400);
    const kind = await call(
      "POST",
      channelsOf(team.id),
      { kind: "pager", name: "x" },
      { token: owner.token },
    );
    expect(kind.status).toBe(400);
    expect(kind.body.error).toContain("kind");
  });

  it("refuses webhook URLs to private, loopback, link-local and metadata addresses, as imports do", async () => {
    const { owner, team } = await ownerWithTeam();
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://10.0.0.1/hook",
      "http://192.168.1.1/hook",
      "http://172.16.0.1/hook",
      "http://[::1]/hook",
      "http://[fd00::1]/hook",
      "http://0x0a000001/hook",
      "http://metadata.google.internal/hook",
      "http://user:pass@127.0.0.1/hook",
      "ftp://example.com/hook",
      "not a url",
    ]) {
      for (const kind of ["webhook", "chat"]) {
        const res = await call(
          "POST",
          channelsOf(team.id),
          { kind, name: "evil", url },
          { token: owner.token },
        );
        expect(res.status, `${kind} ${url}`).toBe(400);
        expect(res.body.error, url).toMatch(/^url: /);
      }
    }
    const ok = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "fine",
      url: `${RECEIVER}${hookPath()}`,
    });
    const moved = await call(
      "PATCH",
      `${channelsOf(team.id)}/${ok.id}`,
      { url: "http://169.254.169.254/" },
      { token: owner.token },
    );
    expect(moved.status).toBe(400);
    expect((await call("GET", channelsOf(team.id), undefined, { token: owner.token })).body[0].url).toBe(
      ok.url,
    );
  });

  it("is the owner's: a member gets 403, a stranger 404, and another team's channel is 404", async () => {
    const { owner, member, team, outsider } = await teamFixture({ outsider: true });
    const channel = await addChannel(owner, team.id, { kind: "email", name: "mail" });
    for (const who of [member, outsider]) {
      const expected = who === member ? 403 : 404;
      expect((await call("GET", channelsOf(team.id), undefined, { token: who.token })).status).toBe(expected);
      expect(
        (await call("POST", channelsOf(team.id), { kind: "email", name: "m" }, { token: who.token })).status,
      ).toBe(expected);
      expect(
        (await call("POST", `${channelsOf(team.id)}/${channel.id}/test`, undefined, { token: who.token }))
          .status,
      ).toBe(expected);
      expect(
        (await call("GET", `/api/teams/${team.id}/alerts/deliveries`, undefined, { token: who.token }))
          .status,
      ).toBe(expected);
    }
    // the outsider's own team cannot reach the channel by its id
    const theirs = await createTeam(outsider);
    for (const [method, path] of [
      ["PATCH", `${channelsOf(theirs.id)}/${channel.id}`],
      ["DELETE", `${channelsOf(theirs.id)}/${channel.id}`],
      ["POST", `${channelsOf(theirs.id)}/${channel.id}/test`],
    ] as const) {
      const res = await call(method, path, method === "PATCH" ? { name: "mine" } : undefined, {
        token: outsider.token,
      });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect(await deliveries(outsider, theirs.id, `?channel_id=${channel.id}`)).toEqual([]);
  });
});

describe("test send and deliveries", () => {
  it("a webhook test is signed with the channel's secret, timestamped, and recorded delivered with its status", async () => {
    const { owner, team } = await ownerWithTeam();
    const path = hookPath();
    const channel = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "ops",
      url: `${RECEIVER}${path}`,
    });
    const sent = await call("POST", `${channelsOf(team.id)}/${channel.id}/test`, undefined, {
      token: owner.token,
    });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ channel_id: channel.id, state: "test", status: "pending" });
    const [hit] = await receivedAt(path);
    expect(hit?.method).toBe("POST");
    expect(hit?.headers["podhost-delivery"]).toBe(sent.body.id);
    expect(hit?.headers["podhost-event"]).toBe("alert.test");
    const sig = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(hit?.headers["podhost-signature"] ?? "");
    expect(sig).not.toBeNull();
    const [, t, v1] = sig ?? [];
    expect(Math.abs(Date.now() / 1000 - Number(t))).toBeLessThan(300);
    expect(v1).toBe(await hmacHex(channel.secret ?? "", `${t}.${hit?.body}`));
    // another secret does not verify it: the signature is the channel's
    expect(v1).not.toBe(await hmacHex("whsec_other", `${t}.${hit?.body}`));
    const body = JSON.parse(hit?.body ?? "{}");
    expect(body).toMatchObject({
      id: sent.body.id,
      type: "alert.test",
      team: { id: team.id, name: team.name },
    });
    await expect
      .poll(async () => (await deliveries(owner, team.id))[0], { timeout: 10_000 })
      .toMatchObject({ id: sent.body.id, status: "delivered", status_code: 200, attempts: 1 });
  });

  it("a receiver's 5xx is retried with backoff and then delivered", async () => {
    const { owner, team } = await ownerWithTeam();
    const path = hookPath();
    await respond(path, 503, 2);
    const channel = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "ops",
      url: `${RECEIVER}${path}`,
    });
    await using introspector = await introspectWorkflow(env.ALERT_DELIVER);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    const sent = await call("POST", `${channelsOf(team.id)}/${channel.id}/test`, undefined, {
      token: owner.token,
    });
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    const hits = await receivedAt(path, 3);
    expect(hits.map((h) => h.answered)).toEqual([503, 503, 200]);
    // every attempt is the same delivery (receivers drop a repeat), each signed at its own time
    expect(new Set(hits.map((h) => h.headers["podhost-delivery"]))).toEqual(new Set([sent.body.id]));
    const [latest] = await deliveries(owner, team.id);
    expect(latest).toMatchObject({ status: "delivered", status_code: 200, attempts: 3 });
  });

  it("a receiver's 4xx fails the delivery at once, with its status code", async () => {
    const { owner, team } = await ownerWithTeam();
    const path = hookPath();
    await respond(path, 410, 5);
    const channel = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "gone",
      url: `${RECEIVER}${path}`,
    });
    await using introspector = await introspectWorkflow(env.ALERT_DELIVER);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    await call("POST", `${channelsOf(team.id)}/${channel.id}/test`, undefined, { token: owner.token });
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    expect((await receivedAt(path)).length).toBe(1);
    const [latest] = await deliveries(owner, team.id, `?channel_id=${channel.id}`);
    expect(latest).toMatchObject({ status: "failed", status_code: 410, attempts: 1 });
  });

  it("a chat webhook gets Slack's text and Discord's content, a hostile team name made inert", async () => {
    const owner = await registerUser("Olive Owner");
    const team = await createTeam(owner, "<!channel> @everyone <https://evil.example|click>");
    const path = hookPath();
    const channel = await addChannel(owner, team.id, {
      kind: "chat",
      name: "slack",
      url: `${RECEIVER}${path}`,
    });
    expect(channel).not.toHaveProperty("secret");
    await call("POST", `${channelsOf(team.id)}/${channel.id}/test`, undefined, { token: owner.token });
    const [hit] = await receivedAt(path);
    const body = JSON.parse(hit?.body ?? "{}");
    expect(body.text).toContain("test alert");
    expect(body.content).toContain("test alert");
    expect(body.allowed_mentions).toEqual({ parse: [] });
    // Slack: the name's <!channel> and <url|text> are text, not a mention or a link
    expect(body.text).toContain("&lt;!channel&gt; @everyone &lt;https://evil.example|click&gt;");
    expect(body.text).not.toContain("<!channel>");
    expect(hit?.headers["podhost-signature"]).toBeUndefined();
  });

  it("an email channel mails the members of its roles", async () => {
    const { owner, member, team } = await teamFixture();
    const ownersOnly = await addChannel(owner, team.id, { kind: "email", name: "owners" });
    await call("POST", `${channelsOf(team.id)}/${ownersOnly.id}/test`, undefined, { token: owner.token });
    await expect
      .poll(
        async () =>
          (await mailsTo(owner.user.email)).filter((m) => m.subject.startsWith("Test alert")).length,
      )
      .toBe(1);
    const everyone = await addChannel(owner, team.id, {
      kind: "email",
      name: "all",
      roles: ["owner", "member"],
    });
    await call("POST", `${channelsOf(team.id)}/${everyone.id}/test`, undefined, { token: owner.token });
    await expect
      .poll(
        async () =>
          (await mailsTo(member.user.email)).filter((m) => m.subject.startsWith("Test alert")).length,
      )
      .toBe(1);
    expect((await mailsTo(owner.user.email)).filter((m) => m.subject.startsWith("Test alert"))).toHaveLength(
      2,
    );
  });
});

describe("a delivery whose Workflow never started", () => {
  it("is sent by the cron's redispatch", async () => {
    const { owner, team } = await ownerWithTeam();
    const path = hookPath();
    const channel = await addChannel(owner, team.id, {
      kind: "webhook",
      name: "ops",
      url: `${RECEIVER}${path}`,
    });
    const id = newId("ald");
    const createdAt = new Date(Date.now() - 11 * 60_000).toISOString();
    await db.insert(alertDeliveries).values({
      id,
      teamId: team.id,
      channelId: channel.id,
      event: "test",
      state: "test",
      payload: JSON.stringify({ id, type: "alert.test", summary: "stranded", created_at: createdAt }),
      createdAt,
    });
    expect(await redispatchPendingDeliveries(env, db, Date.now())).toBeGreaterThanOrEqual(1);
    const [hit] = await receivedAt(path);
    expect(hit?.headers["podhost-delivery"]).toBe(id);
    await expect
      .poll(async () => (await deliveries(owner, team.id)).find((d) => d.id === id)?.status, {
        timeout: 10_000,
      })
      .toBe("delivered");
  });
});

describe("events", () => {
  async function watchedPod() {
    const { owner, team } = await ownerWithTeam();
    const path = hookPath();
    await addChannel(owner, team.id, { kind: "webhook", name: "ops", url: `${RECEIVER}${path}` });
    const podId = await insertPod(team.id);
    return { owner, team, path, podId };
  }

  async function deployment(podId: string, ok: boolean) {
    const id = newId("dep");
    await db.insert(deployments).values({
      id,
      podId,
      trigger: "manual",
      status: "deploying",
      stage: "running",
      createdAt: new Date().toISOString(),
    });
    await finishDeployment(
      db,
      id,
      ok
        ? { ok: true, commitSha: "a".repeat(40), commitMessage: "fix", release: "r1" }
        : { ok: false, class: "build", message: "npm run build exited 1" },
    );
    await alertOnDeployment(env, db, id);
  }

  it("deploy failed: alerts once per incident, however often it fails, and once more when resolved", async () => {
    const { owner, team, path, podId } = await watchedPod();
    await deployment(podId, false);
    await deployment(podId, false);
    const [fired] = await receivedAt(path);
    const firing = JSON.parse(fired?.body ?? "{}");
    expect(firing).toMatchObject({ type: "alert.firing", event: "deploy_failed", pod: { id: podId } });
    expect(firing.summary).toContain("npm run build exited 1");
    await deployment(podId, true);
    const hits = await receivedAt(path, 2);
    expect(hits.map((h) => JSON.parse(h.body).type)).toEqual(["alert.firing", "alert.resolved"]);
    expect(JSON.parse(hits[1]?.body ?? "{}").incident.id).toBe(firing.incident.id);
    // a new failure after the resolution is a new incident
    await deployment(podId, false);
    const again = await receivedAt(path, 3);
    expect(again).toHaveLength(3);
    expect(JSON.parse(again[2]?.body ?? "{}").incident.id).not.toBe(firing.incident.id);
    const history = await deliveries(owner, team.id);
    expect(history.map((d) => `${d.event}/${d.state}`).sort()).toEqual([
      "deploy_failed/firing",
      "deploy_failed/firing",
      "deploy_failed/resolved",
    ]);
  });

  it("backup failed: the failure alerts, a verified backup resolves it", async () => {
    const { path, podId } = await watchedPod();
    const backup = async () => {
      const id = newId("bkp");
      await db.insert(backups).values({
        id,
        podId,
        status: "in_progress",
        trigger: "manual",
        objectKey: `backups/${podId}/${id}.tar.gz`,
        createdAt: new Date().toISOString(),
      });
      return id;
    };
    expect(await failBackup(env, db, await backup(), "the host ran out of disk")).toBe(true);
    const [fired] = await receivedAt(path);
    expect(JSON.parse(fired?.body ?? "{}")).toMatchObject({ type: "alert.firing", event: "backup_failed" });
    expect(JSON.parse(fired?.body ?? "{}").summary).toContain("the host ran out of disk");
    const good = await backup();
    await recordVerified(env, db, good, { ok: true, value: { ok: true } } as Parameters<
      typeof recordVerified
    >[3]);
    const hits = await receivedAt(path, 2);
    expect(hits.map((h) => JSON.parse(h.body).type)).toEqual(["alert.firing", "alert.resolved"]);
  });

  it("database service failed: its failed install alerts, a running service resolves it", async () => {
    const { path, podId } = await watchedPod();
    const service = async (status: "error" | "running") => {
      const id = newId("svc");
      const now = new Date().toISOString();
      await db.insert(podServices).values({
        id,
        podId,
        serviceType: "redis",
        status,
        port: 6379,
        passwordEncrypted: "v2.x.y.z",
        errorMsg: status === "error" ? "redis-server exited 1" : null,
        createdAt: now,
        updatedAt: now,
      });
      await alertOnService(env, db, id);
      await db.delete(podServices).where(eq(podServices.id, id));
    };
    await service("error");
    const [fired] = await receivedAt(path);
    expect(JSON.parse(fired?.body ?? "{}")).toMatchObject({ type: "alert.firing", event: "service_failed" });
    expect(JSON.parse(fired?.body ?? "{}").summary).toContain("redis-server exited 1");
    await service("running");
    const hits = await receivedAt(path, 2);
    expect(hits.map((h) => JSON.parse(h.body).type)).toEqual(["alert.firing", "alert.resolved"]);
  });

  it("an event switched off for the team does not alert; a pod's own rule wins over the team's", async () => {
    const { owner, team, path, podId } = await watchedPod();
    const [pod] = await db.select({ name: pods.name }).from(pods).where(eq(pods.id, podId));
    const events = `/api/teams/${team.id}/alerts/events`;
    const initial = await call("GET", events, undefined, { token: owner.token });
    expect(initial.body).toEqual({
      events: ALERT_EVENTS.map((event) => ({ event, enabled: true })),
      pods: [],
    });
    const off = await call("PUT", events, { event: "deploy_failed", enabled: false }, { token: owner.token });
    expect(off.status).toBe(200);
    expect(off.body.events[0]).toEqual({ event: "deploy_failed", enabled: false });
    await deployment(podId, false);
    // the pod turns it back on for itself: its next failure alerts (the first opened no incident)
    const podOn = await call(
      "PUT",
      events,
      { event: "deploy_failed", enabled: true, pod: pod?.name },
      { token: owner.token },
    );
    expect(podOn.body.pods).toEqual([{ pod: pod?.name, event: "deploy_failed", enabled: true }]);
    expect(await deliveries(owner, team.id)).toEqual([]);
    await deployment(podId, false);
    expect((await receivedAt(path)).map((h) => JSON.parse(h.body).type)).toEqual(["alert.firing"]);
    // another team's pod, an unknown event and a member are refused
    const stranger = await ownerWithTeam();
    const foreignPod = await insertPod(stranger.team.id);
    const [foreign] = await db.select({ name: pods.name }).from(pods).where(eq(pods.id, foreignPod));
    const bad = await call(
      "PUT",
      events,
      { event: "deploy_failed", enabled: false, pod: foreign?.name },
      { token: owner.token },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("pod");
    expect(
      (await call("PUT", events, { event: "coffee", enabled: false }, { token: owner.token })).status,
    ).toBe(400);
    expect((await call("GET", events, undefined, { token: stranger.owner.token })).status).toBe(404);
  });

  it("one team's alerts never reach another team's channels", async () => {
    const a = await watchedPod();
    const b = await watchedPod();
    await deployment(a.podId, false);
    await receivedAt(a.path);
    expect(await deliveries(b.owner, b.team.id)).toEqual([]);
    const res = await fetch(`${RECEIVER}/__double/received?path=${encodeURIComponent(b.path)}`);
    expect(((await res.json()) as { data: unknown[] }).data).toEqual([]);
  });
});
