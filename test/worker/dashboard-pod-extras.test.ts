import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { loggedPath } from "../../worker/http/middleware";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, freshIp, registerUser } from "./support/client";
import { DASHBOARD_ORIGIN, page, signedIn } from "./support/dashboard";
import { running } from "./support/pods";
import { activeTeamOf, createTeam, invite } from "./support/teams";

/**
 * A pod's Domains, Feedback, Coding agents and Events tabs and the invitation page
 * (docs/dashboard.md), rendered by the real Worker in workerd from real rows made through the API
 * where the API can make them. A stranger's text (a visitor's comment, an event's message, a team's
 * name) must arrive as text; another team's pod is the same 404 page as a missing one.
 */

afterEach(() => FakeAgent.closeAll());

const EVIL = "<img src=x onerror=alert(1)>";
const ESCAPED = "&lt;img src=x onerror=alert(1)&gt;";

/** A signed-in user and a pod of their team (no host: enough for what reads D1 only). */
async function userWithPod(status = "running") {
  const user = await signedIn();
  const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status });
  return { user, pod };
}

/** Cookie calls from the dashboard's own origin, as its forms send them. */
const fromPage = (session: string) => ({
  cookie: `pod_session=${session}`,
  headers: { origin: DASHBOARD_ORIGIN, "sec-fetch-site": "same-origin" },
});

/** The text of the page without its `<details class="curl">` (where example bodies live). */
const withoutCurl = (html: string) => html.replace(/<details class="curl">[\s\S]*?<\/details>/g, "");

describe("the Domains tab", () => {
  it("lists the pod's domains with the TXT record to create, exactly, with copy; verify and remove call the API", async () => {
    const { user, pod } = await userWithPod();
    const added = await call(
      "POST",
      `/api/pods/${pod.name}/domains`,
      { domain: "WWW.Example.COM" },
      { token: user.token },
    );
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const { id, verification } = added.body as { id: string; verification: { name: string; value: string } };

    const res = await page(`/app/pods/${pod.name}/domains`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("www.example.com");
    expect(res.text).toContain('class="badge status-pending">pending<');
    expect(verification.name).toBe("_podhost-verify.www.example.com");
    expect(res.text).toContain(`<code>${verification.name}</code>`);
    expect(res.text).toContain(`<code>${verification.value}</code>`);
    expect(res.text).toContain(`data-copy="${verification.value}"`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/domains"`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/domains/${id}/verify"`);
    expect(res.text).toMatch(
      new RegExp(`data-api="/api/pods/${pod.name}/domains/${id}" data-method="DELETE"`),
    );
    expect(res.text).toContain(
      `curl -X POST &#39;http://localhost:8787/api/pods/${pod.name}/domains/${id}/verify&#39;`,
    );
    expect(res.text).toContain(`aria-current="page">Domains<`);

    // verified: no record to publish any more, no verify button
    await env.DB.prepare("UPDATE domains SET status = 'verified', verified_at = ? WHERE id = ?")
      .bind(new Date().toISOString(), id)
      .run();
    const verified = await page(`/app/pods/${pod.name}/domains`, { session: user.session });
    expect(verified.text).toContain('class="badge status-verified">verified<');
    expect(withoutCurl(verified.text)).not.toContain("Verify www.example.com");
    expect(withoutCurl(verified.text)).not.toContain(verification.value);
  });

  it("shows a verified domain's certificate state (tls_status) with what to do; a failure's reason as text, with a restart", async () => {
    const { user, pod } = await userWithPod();
    const added = await call(
      "POST",
      `/api/pods/${pod.name}/domains`,
      { domain: "shop.example.com" },
      { token: user.token },
    );
    expect(added.status).toBe(201);
    const id = (added.body as { id: string }).id;
    const verify = `data-api="/api/pods/${pod.name}/domains/${id}/verify"`;
    const shown = async (tls: string | null) => {
      await env.DB.prepare(
        "UPDATE domains SET status = 'verified', verified_at = ?, tls_status = ? WHERE id = ?",
      )
        .bind(new Date().toISOString(), tls, id)
        .run();
      const res = await page(`/app/pods/${pod.name}/domains`, { session: user.session });
      expect(res.status).toBe(200);
      return withoutCurl(res.text);
    };

    const pending = await shown("pending");
    expect(pending).toContain('class="badge status-pending">HTTPS pending<');
    expect(pending).toContain(`a CNAME to <code>${pod.name}.${env.POD_DOMAIN}</code>`);
    expect(pending).toContain(verify);
    expect(pending).toContain("Check now");
    // before the first registration (null) it reads as pending
    expect(await shown(null)).toContain("HTTPS pending");

    const active = await shown("active");
    expect(active).toContain('class="badge status-success">HTTPS active<');
    expect(active).not.toContain(verify);

    const off = await shown("not_configured");
    expect(off).toContain('class="badge status-stopped">HTTPS not configured<');
    expect(off).toContain("issues no certificates");
    expect(off).not.toContain(verify);

    const failed = await shown(`failed: caa_error: ${EVIL}`);
    expect(failed).toContain('class="badge status-failed">HTTPS failed<');
    expect(failed).toContain(`<strong>caa_error: ${ESCAPED}</strong>`);
    expect(failed).not.toContain(EVIL);
    expect(failed).toContain(verify);
    expect(failed).toContain("Restart certificate validation");

    // a pending domain (not verified) shows no certificate state at all
    await env.DB.prepare(
      "UPDATE domains SET status = 'pending', verified_at = NULL, tls_status = NULL WHERE id = ?",
    )
      .bind(id)
      .run();
    const unverified = withoutCurl(
      (await page(`/app/pods/${pod.name}/domains`, { session: user.session })).text,
    );
    expect(unverified).not.toContain("HTTPS");
  });

  it("says so when there are none", async () => {
    const { user, pod } = await userWithPod();
    const res = await page(`/app/pods/${pod.name}/domains`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("No custom domains yet.");
  });
});

/** A user's running pod on a connected fake host, so the feedback settings can really change. */
async function podOnHost() {
  const host = await insertHost();
  const user = await signedIn();
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
  const { agent } = await FakeAgent.online(host, [running(pod.name)]);
  return { user, pod, agent };
}

describe("the Feedback tab", () => {
  it("shows the settings and the inbox with counts; a visitor's markup is text; the share link stays out until revealed", async () => {
    const { user, pod, agent } = await podOnHost();
    const pending = call(
      "POST",
      `/api/pods/${pod.name}/feedback/settings`,
      { enabled: true },
      { token: user.token },
    );
    const set = await agent.next("control:call", 5_000);
    expect(set.op).toBe("pod.feedback.set");
    agent.ok(set, { rendered: true });
    const enabled = await pending;
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    const token = enabled.body.token as string;

    // two comments through the public endpoint, as the widget sends them: one a stranger's markup
    for (const comment of [EVIL, "Plain words"]) {
      const sent = await call(
        "POST",
        `/api/feedback/${token}`,
        { comment, name: `Visitor ${EVIL}`, page_path: "/", element_text: EVIL, pin_selector: "h1" },
        { ip: freshIp(), headers: { origin: `https://${pod.name}.${env.POD_DOMAIN}` } },
      );
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    }
    const listed = await call("GET", `/api/pods/${pod.name}/feedback`, undefined, { token: user.token });
    const [newest] = listed.body.feedback as { id: string; comment: string }[];
    expect(newest?.comment).toBe("Plain words");

    const res = await page(`/app/pods/${pod.name}/feedback`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).not.toMatch(/<img\b/);
    expect(res.text).toContain(`<p class="comment-text">${ESCAPED}</p>`);
    expect(res.text).toContain(`Visitor ${ESCAPED}`);
    expect(res.text).toContain("Collecting feedback: <strong>on</strong>");
    expect(res.text).toContain("All (2)");
    expect(res.text).toContain("New (2)");
    expect(res.text).toContain("Resolved (0)");
    // the token (the share link's secret) is not in the page: the Reveal button fetches it
    expect(res.text).not.toContain(token);
    expect(res.text).toContain(`data-reveal="/api/pods/${pod.name}/feedback?limit=1"`);
    expect(res.text).toContain('data-reveal-field="share_url"');
    expect(res.text).toMatch(/<script src="\/app\/assets\/reveal\.js\?v=/);
    // triage and delete are the API's PATCH and DELETE
    expect(res.text).toMatch(
      new RegExp(`data-api="/api/pods/${pod.name}/feedback/${newest?.id}" data-method="PATCH"`),
    );
    expect(res.text).toMatch(
      new RegExp(`data-api="/api/pods/${pod.name}/feedback/${newest?.id}" data-method="DELETE"`),
    );
    expect(res.text).toContain(
      `curl &#39;http://localhost:8787/api/pods/${pod.name}/feedback?limit=20&amp;offset=0&#39;`,
    );

    // what a Reveal asks for answers the share link (the page's script shows share_url)
    const revealed = await call(
      "GET",
      `/api/pods/${pod.name}/feedback?limit=1`,
      undefined,
      fromPage(user.session),
    );
    expect(revealed.status).toBe(200);
    expect(revealed.body.share_url).toContain(token);

    // triaged through the API as the page's form does it; the filter shows what is left
    const triaged = await call(
      "PATCH",
      `/api/pods/${pod.name}/feedback/${newest?.id}`,
      { status: "resolved" },
      fromPage(user.session),
    );
    expect(triaged.status, JSON.stringify(triaged.body)).toBe(200);
    const onlyNew = await page(`/app/pods/${pod.name}/feedback?status=new`, { session: user.session });
    expect(onlyNew.text).toContain("New (1)");
    expect(onlyNew.text).toContain("Resolved (1)");
    expect(onlyNew.text).not.toContain("Plain words");
    expect(onlyNew.text).toContain('aria-current="page">New (1)<');
    const resolved = await page(`/app/pods/${pod.name}/feedback?status=resolved`, { session: user.session });
    expect(resolved.text).toContain("Plain words");
    expect(resolved.text).not.toContain(`<p class="comment-text">${ESCAPED}`);
  });

  it("answers a bad status filter with a 400 page, and an empty inbox in words", async () => {
    const { user, pod } = await userWithPod();
    const bad = await page(`/app/pods/${pod.name}/feedback?status=%3Cb%3E`, { session: user.session });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("status: must be new, read or resolved");
    const empty = await page(`/app/pods/${pod.name}/feedback`, { session: user.session });
    expect(empty.status).toBe(200);
    expect(empty.text).toContain("No comments yet.");
    expect(empty.text).toContain("Collecting feedback: <strong>off</strong>");
    expect(empty.text).toContain("Enable feedback");
  });
});

async function agentRow(podId: string, slug: string, status: string, extra: Record<string, unknown> = {}) {
  const now = new Date().toISOString();
  await env.DB.prepare(
    `INSERT INTO pod_coding_agents (id, pod_id, slug, status, requested_version, version, node_major, node_pinned, error_msg, installed_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'latest', ?, ?, ?, ?, ?, ?, ?)`,
  )
    .bind(
      newId("agt"),
      podId,
      slug,
      status,
      extra.version ?? null,
      extra.node_major ?? null,
      extra.node_pinned ?? null,
      extra.error_msg ?? null,
      now,
      now,
      now,
    )
    .run();
}

describe("the Coding agents tab", () => {
  it("shows the catalog with the pod's state of each agent, live while one installs", async () => {
    const { user, pod } = await userWithPod();
    await agentRow(pod.id, "codex", "installing");
    await agentRow(pod.id, "opencode", "installed", { version: "1.18.33", node_major: 20, node_pinned: 0 });
    await agentRow(pod.id, "gemini-cli", "error", { error_msg: `npm view failed: ${EVIL}` });

    const res = await page(`/app/pods/${pod.name}/agents`, { session: user.session });
    expect(res.status).toBe(200);
    for (const name of ["Claude Code", "Codex CLI", "Gemini CLI", "opencode", "Qwen Code"]) {
      expect(res.text, name).toContain(name);
    }
    expect(res.text).toContain("@anthropic-ai/claude-code");
    expect(res.text).toContain('class="badge status-installing">installing<');
    expect(res.text).toContain('class="badge status-installed">installed<');
    expect(res.text).toContain("1.18.33 on Node 20");
    expect(res.text).toContain(`npm view failed: ${ESCAPED}`);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain("Install Gemini CLI again");
    expect(res.text).toContain("Install Claude Code");
    expect(res.text).toMatch(
      new RegExp(`data-api="/api/pods/${pod.name}/agents/opencode" data-method="DELETE"`),
    );
    expect(res.text).toContain('<input type="hidden" name="agent" value="claude-code"');
    // live: the rows poll every 2 s while an install runs
    expect(res.text).toContain(`hx-get="/app/pods/${pod.name}/agents/rows"`);
    expect(res.text).toContain('hx-trigger="every 2s"');
    expect(res.text).toContain("curl &#39;http://localhost:8787/api/agents&#39;");

    await env.DB.prepare(
      "UPDATE pod_coding_agents SET status = 'installed', version = '0.169.0', node_major = 20 WHERE pod_id = ? AND slug = 'codex'",
    )
      .bind(pod.id)
      .run();
    const rows = await page(`/app/pods/${pod.name}/agents/rows`, { session: user.session });
    expect(rows.status).toBe(200);
    expect(rows.text).toMatch(/^<tbody id="agent-rows">/);
    expect(rows.text).toContain("0.169.0 on Node 20");
    // nothing installs any more: the fragment comes back without its trigger, and the polling stops
    expect(rows.text).not.toContain("hx-trigger");
  });

  it("shows what an install through the API answers: the pod not running is the API's 400", async () => {
    const { user, pod } = await userWithPod("stopped");
    const res = await call(
      "POST",
      `/api/pods/${pod.name}/agents`,
      { agent: "codex" },
      fromPage(user.session),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/running/);
  });
});

describe("the Events tab", () => {
  it("lists the pod's events newest first, filters by type and pages; messages are text", async () => {
    const { user, pod } = await userWithPod();
    const base = Date.parse("2026-01-01T00:00:00Z");
    for (let i = 0; i < 55; i++) {
      await env.DB.prepare(
        "INSERT INTO pod_events (id, pod_id, type, message, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
        .bind(
          newId("evt"),
          pod.id,
          i % 5 === 0 ? "restarted" : "progress",
          i === 54 ? `newest ${EVIL}` : `event ${i}`,
          i === 54 ? JSON.stringify({ note: EVIL }) : null,
          new Date(base + i * 1000).toISOString(),
        )
        .run();
    }
    const res = await page(`/app/pods/${pod.name}/events`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain(`newest ${ESCAPED}`);
    expect(res.text.indexOf("newest")).toBeLessThan(res.text.indexOf("event 53"));
    expect(res.text).toContain("1–50 of 55");
    expect(res.text).not.toContain("event 4<");
    expect(res.text).toContain(`href="/app/pods/${pod.name}/events?offset=50"`);
    expect(res.text).toContain('<option value="restarted">restarted</option>');
    expect(res.text).toContain(
      `curl &#39;http://localhost:8787/api/pods/${pod.name}/events?limit=50&amp;offset=0&#39;`,
    );

    const older = await page(`/app/pods/${pod.name}/events?offset=50`, { session: user.session });
    expect(older.text).toContain("51–55 of 55");
    expect(older.text).toContain("event 0<");

    const restarts = await page(`/app/pods/${pod.name}/events?type=restarted`, { session: user.session });
    expect(restarts.text).toContain('<option value="restarted" selected="">restarted</option>');
    expect(restarts.text).toContain("event 50");
    expect(restarts.text).not.toContain("event 51");
    expect(restarts.text).not.toContain("Older");
    expect(restarts.text).toContain(`/api/pods/${pod.name}/events?type=restarted&amp;limit=50`);

    const unknownType = await page(`/app/pods/${pod.name}/events?type=${encodeURIComponent(EVIL)}`, {
      session: user.session,
    });
    expect(unknownType.status).toBe(200);
    expect(unknownType.text).not.toContain(EVIL);
    expect(unknownType.text).toContain(`No ${ESCAPED} events.`);
    expect(
      (await page(`/app/pods/${pod.name}/events?type=${"x".repeat(41)}`, { session: user.session })).status,
    ).toBe(400);
  });
});

describe("a pod's tabs against an attacker", () => {
  const TABS = ["domains", "feedback", "agents", "events", "agents/rows"];

  it("shows another team's pod exactly as a missing one: the 404 page, nothing of it", async () => {
    const victim = await userWithPod();
    await call(
      "POST",
      `/api/pods/${victim.pod.name}/domains`,
      { domain: "secret.example.com" },
      {
        token: victim.user.token,
      },
    );
    const attacker = await signedIn("Attacker");
    for (const tab of TABS) {
      const foreign = await page(`/app/pods/${victim.pod.name}/${tab}`, { session: attacker.session });
      const missing = await page(`/app/pods/no-such-pod-x/${tab}`, { session: attacker.session });
      expect(foreign.status, tab).toBe(404);
      expect(missing.status, tab).toBe(404);
      expect(foreign.text, tab).toBe(missing.text);
      expect(foreign.text, tab).not.toContain("secret.example.com");
    }
  });

  it("sends a signed-out browser to sign-in with where it was going", async () => {
    const { pod } = await userWithPod();
    for (const tab of TABS) {
      const res = await page(`/app/pods/${pod.name}/${tab}?offset=5`);
      expect(res.status, tab).toBe(302);
      expect(res.headers.get("location"), tab).toBe(
        `/app/sign-in?next=${encodeURIComponent(`/app/pods/${pod.name}/${tab}?offset=5`)}`,
      );
    }
  });
});

describe("the invitation page", () => {
  it("signed out: who invites to which team, and sign-in or register coming back here", async () => {
    const owner = await registerUser("Olive <b>Owner</b>");
    const team = await createTeam(owner, `Team ${EVIL}`);
    const inv = await invite(owner, team.id, "invitee@example.test");
    const res = await page(`/app/invitations/${inv.token}`);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain(`Join Team ${ESCAPED}`);
    expect(res.text).toContain("Olive &lt;b&gt;Owner&lt;/b&gt;");
    expect(res.text).toContain("invitee@example.test");
    const next = encodeURIComponent(`/app/invitations/${inv.token}`);
    expect(res.text).toContain(`href="/app/sign-in?next=${next}"`);
    expect(res.text).toContain(`href="/app/register?next=${next}"`);
    // and sign-in really comes back here
    const signIn = await page(`/app/sign-in?next=${next}`);
    expect(signIn.text).toContain(`data-then="go:/app/invitations/${inv.token}"`);
  });

  it("signed in: Accept calls the accept API, which joins the team and makes it active; the link is then used up", async () => {
    const owner = await registerUser("Olive Owner");
    const team = await createTeam(owner, "Acme");
    const invitee = await signedIn("Ivy Invitee");
    const inv = await invite(owner, team.id, invitee.user.email);

    const res = await page(`/app/invitations/${inv.token}`, { session: invitee.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("Accept and join Acme");
    expect(res.text).toContain('data-api="/api/invitations/accept"');
    expect(res.text).toContain(`<input type="hidden" name="token" value="${inv.token}"`);
    expect(res.text).toContain('data-then="go:/app"');
    expect(res.text).not.toContain("You are signed in as");
    // the invitation's calls are public: no API token in their curl lines
    expect(res.text).toContain(
      `curl &#39;http://localhost:8787/api/invitations/${inv.token}&#39;\n`.trimEnd(),
    );
    expect(res.text).not.toContain(`/api/invitations/${inv.token}&#39; -H &quot;Authorization`);

    const accepted = await call(
      "POST",
      "/api/invitations/accept",
      { token: inv.token },
      fromPage(invitee.session),
    );
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body).toEqual({ status: "joined", team_id: team.id });
    expect(await activeTeamOf(invitee)).toBe(team.id);

    const used = await page(`/app/invitations/${inv.token}`, { session: invitee.session });
    expect(used.status).toBe(404);
    expect(used.text).toContain("not valid");
  });

  it("tells a signed-in user when the invitation was sent to another address", async () => {
    const owner = await registerUser("Olive Owner");
    const team = await createTeam(owner, "Acme");
    const inv = await invite(owner, team.id, "someone-else@example.test");
    const other = await signedIn("Other Person");
    const res = await page(`/app/invitations/${inv.token}`, { session: other.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`You are signed in as ${other.user.email}`);
  });

  it("answers an unknown, over-long or expired token with the 404 page, and keeps the token out of the request log", async () => {
    for (const token of ["nope", "x".repeat(300)]) {
      const res = await page(`/app/invitations/${token}`);
      expect(res.status).toBe(404);
      expect(res.text).toContain("not valid");
    }
    expect(loggedPath("/app/invitations/tok_secret")).toBe("/app/invitations/[redacted]");
    expect(loggedPath("/app/invitations")).toBe("/app/invitations");
  });
});
