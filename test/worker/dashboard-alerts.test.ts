import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { randomToken } from "../../shared/ids";
import { ALERT_EVENTS } from "../../worker/db/schema";
import { insertPod } from "./support/agent";
import { call, type TestUser } from "./support/client";
import { page, signedIn } from "./support/dashboard";
import { addMember, createTeam } from "./support/teams";

/**
 * The dashboard's alerts (worker/dashboard/routes/team-alerts.tsx, the pod's Events tab): the team's
 * channels, event switches and delivery history, rendered with the alerts verbs, changed through
 * `/api/teams/{id}/alerts/*`; tenant text escaped; a webhook's secret and a chat URL's path never in
 * the page; the owner's only, as the API has it.
 */

const EVIL = "<img src=x onerror=alert(1)>";
const RECEIVER = env.WEBHOOK_RECEIVER_URL;

async function addChannel(owner: TestUser, teamId: string, body: Record<string, unknown>) {
  const res = await call("POST", `/api/teams/${teamId}/alerts/channels`, body, { token: owner.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; secret?: string };
}

/** A delivery as the deliver Workflow leaves one, with the receiver's words in `last_error`. */
async function insertDelivery(teamId: string, channelId: string) {
  await env.DB.prepare(
    "INSERT INTO alert_deliveries (id, team_id, channel_id, incident_id, event, state, payload, status, status_code, attempts, last_error, created_at) VALUES (?, ?, ?, NULL, 'deploy_failed', 'firing', '{}', 'failed', 502, 6, ?, ?)",
  )
    .bind(`ald_${randomToken(12)}`, teamId, channelId, `HTTP 502: ${EVIL}`, new Date().toISOString())
    .run();
}

describe("the team's alerts page", () => {
  it("shows the owner the channels, every event's switch, the deliveries with status codes, and the curl lines", async () => {
    const owner = await signedIn("Alerts Owner");
    const teamId = owner.user.active_team_id;
    const hookPath = `/hooks/${randomToken(16)}`;
    const webhook = await addChannel(owner, teamId, {
      kind: "webhook",
      name: EVIL,
      url: `${RECEIVER}${hookPath}`,
    });
    const chatPath = `/services/T000/B000/${randomToken(16)}`;
    await addChannel(owner, teamId, { kind: "chat", name: "slack", url: `${RECEIVER}${chatPath}` });
    await addChannel(owner, teamId, { kind: "email", name: "everyone", roles: ["owner", "member"] });
    await insertDelivery(teamId, webhook.id);
    await call(
      "PUT",
      `/api/teams/${teamId}/alerts/events`,
      { event: "backup_failed", enabled: false },
      { token: owner.token },
    );

    const res = await page("/app/team/alerts", { session: owner.session });
    expect(res.status).toBe(200);
    const html = res.text;
    const api = `/api/teams/${teamId}/alerts`;
    // channels: escaped names, no secret, no webhook path
    expect(html).not.toContain(EVIL);
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(webhook.secret).toMatch(/^whsec_/);
    expect(html).not.toContain(webhook.secret ?? "whsec_");
    expect(html).not.toContain(hookPath);
    expect(html).not.toContain(chatPath);
    expect(html).toContain("members: owner, member");
    expect(html).toContain(`data-api="${api}/channels/${webhook.id}/test"`);
    expect(html).toContain(`data-api="${api}/channels/${webhook.id}" data-method="DELETE"`);
    expect(html).toContain(`data-api="${api}/channels/${webhook.id}" data-method="PATCH"`);
    // the add forms: e-mail by role, the webhook's secret shown once from the answer, chat
    expect(html).toContain('name="roles" data-json');
    expect(html).toContain('data-then="show:secret"');
    expect(html).toContain('value="chat"');
    // every event of the service's list, with its state in words
    for (const event of ALERT_EVENTS) expect(html, event).toContain(`<code class="muted">${event}</code>`);
    expect(html).toMatch(
      /Backup failed <code class="muted">backup_failed<\/code><\/th><td><span class="badge status-stopped">off</,
    );
    expect(html).toContain(`data-api="${api}/events" data-method="PUT"`);
    // the delivery history with its status code, the receiver's text escaped
    expect(html).toContain("<td>502</td>");
    expect(html).toContain("HTTP 502: &lt;img src=x onerror=alert(1)&gt;");
    expect(html).toContain(`curl &#39;http://localhost:8787${api}/channels&#39;`);
    // the team page links here
    expect((await page("/app/team", { session: owner.session })).text).toContain('href="/app/team/alerts"');
  });

  it("shows a member a note and none of the team's channels, as the API's 403", async () => {
    const owner = await signedIn("Alerts Team Owner");
    const member = await signedIn("Alerts Member");
    const team = await createTeam(owner);
    await addMember(owner, team.id, member);
    await addChannel(owner, team.id, { kind: "email", name: "secret-ops-channel" });
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const res = await page("/app/team/alerts", { session: member.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("Only the team&#39;s owner sees and changes its alerts.");
    expect(res.text).not.toContain("secret-ops-channel");
    expect(res.text).not.toContain(`data-api="/api/teams/${team.id}/alerts`);
    const api = await call("GET", `/api/teams/${team.id}/alerts/channels`, undefined, {
      token: member.token,
    });
    expect(api.status).toBe(403);
  });

  it("never shows another team's channels or deliveries, and sends the signed-out to sign in", async () => {
    const victim = await signedIn("Alerts Victim");
    const ch = await addChannel(victim, victim.user.active_team_id, {
      kind: "email",
      name: "victim-channel",
    });
    await insertDelivery(victim.user.active_team_id, ch.id);
    const stranger = await signedIn("Alerts Stranger");
    const res = await page("/app/team/alerts", { session: stranger.session });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain("victim-channel");
    expect(res.text).not.toContain(victim.user.active_team_id);
    expect(res.text).toContain("No channels yet");
    expect(res.text).toContain("No alerts sent yet.");
    const out = await page("/app/team/alerts");
    expect(out.status).toBe(302);
    expect(out.headers.get("location")).toContain("/app/sign-in?next=");
  });
});

describe("a pod's alert switches on its Events tab", () => {
  it("shows each pod event's state for this pod and where it comes from, switched through the API", async () => {
    const owner = await signedIn("Alerts Pod Owner");
    const teamId = owner.user.active_team_id;
    const pod = await insertPod({ hostId: null, teamId, status: "running" });
    const api = `/api/teams/${teamId}/alerts/events`;
    await call("PUT", api, { event: "deploy_failed", enabled: false, pod: pod.name }, { token: owner.token });
    await call("PUT", api, { event: "disk_full", enabled: false }, { token: owner.token });
    const res = await page(`/app/pods/${pod.name}/events`, { session: owner.session });
    expect(res.status).toBe(200);
    const html = res.text;
    expect(html).toContain('id="alerts"');
    expect(html).toMatch(
      /deploy_failed<\/code><\/th><td><span class="badge status-stopped">off<\/span><span class="muted"> \(this pod&#39;s switch\)/,
    );
    expect(html).toMatch(
      /disk_full<\/code><\/th><td><span class="badge status-stopped">off<\/span><span class="muted"> \(as the team&#39;s\)/,
    );
    expect(html).toMatch(/backup_failed<\/code><\/th><td><span class="badge status-running">on</);
    expect(html).toContain(`<input type="hidden" name="pod" value="${pod.name}"/>`);
    // team events (billing) are switched for the team only: not on a pod's tab
    expect(html).not.toContain('<code class="muted">payment_failed</code>');
    // another team's pod is the 404 page, with nothing of its switches
    const stranger = await signedIn("Alerts Pod Stranger");
    const foreign = await page(`/app/pods/${pod.name}/events`, { session: stranger.session });
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain("deploy_failed");
  });
});
