import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { type AuditEventRow, auditEvents } from "../../worker/db/schema";
import { call } from "./support/client";
import { page } from "./support/dashboard";
import { db } from "./support/db";
import { teamFixture } from "./support/teams";

/**
 * The team's audit log page (worker/dashboard/routes/team-audit.tsx, docs/dashboard.md "Audit
 * log"): the owner's rows newest first with the curl line, filters, the cursor's next page,
 * escaping of tenant text, a member gets none of it, another team's rows never show.
 */

const HOSTILE = `</script><script>alert(1)</script><img src=x onerror=alert(2)>`;

function row(teamId: string, over: Partial<AuditEventRow> = {}): AuditEventRow {
  return {
    id: newId("aud"),
    teamId,
    at: new Date(Date.now() - 60_000).toISOString(),
    actorId: "usr_someone",
    actorEmail: "someone@example.test",
    credential: "session",
    credentialLabel: null,
    ip: "203.0.113.9",
    action: "pod.delete",
    pod: "shop",
    target: null,
    outcome: "ok",
    status: 200,
    detail: null,
    ...over,
  };
}

describe("the audit log page", () => {
  it("shows the owner the team's rows newest first, escaped, with filters, the next page and the curl lines", async () => {
    const { owner, member, team, outsider } = await teamFixture({ outsider: true });
    // the page is the active team's: the owner's own team holds the rows
    const ownTeam = owner.user.active_team_id;
    const base = Date.now() - 3_600_000;
    const rows = Array.from({ length: 51 }, (_, i) =>
      row(ownTeam, {
        at: new Date(base + i * 1000).toISOString(),
        action: i === 50 ? "env.set" : "pod.delete",
      }),
    );
    rows.push(
      row(ownTeam, {
        at: new Date(base + 60_000).toISOString(),
        action: "file.write",
        target: HOSTILE,
        detail: JSON.stringify({ argv: [HOSTILE] }),
      }),
    );
    // another team's row, never on this page
    rows.push(row(outsider.user.active_team_id, { action: "exec.run", pod: "not-yours" }));
    for (const r of rows) await db.insert(auditEvents).values(r);

    const first = await page("/app/team/audit", { session: owner.token });
    expect(first.status).toBe(200);
    expect(first.text).toContain("<h1>Audit log</h1>");
    expect(first.text).not.toContain("<script>alert(1)");
    expect(first.text).not.toContain("<img src=x");
    expect(first.text).toContain("&lt;img src=x onerror=alert(2)&gt;");
    expect(first.text).not.toContain("not-yours");
    const shown = [...first.text.matchAll(/<code>([a-z_.]+)<\/code>/g)].map((m) => m[1]);
    expect(shown.slice(0, 3), shown.join(",")).toEqual(["file.write", "env.set", "pod.delete"]);
    expect(first.text).toContain(`/api/teams/${ownTeam}/audit?limit=50`);
    const older = /href="\/app\/team\/audit\?cursor=([^"]+)">Older changes/.exec(first.text);
    expect(older?.[1]).toBeTruthy();

    // the next page: the oldest rows
    const second = await page(`/app/team/audit?cursor=${older?.[1]}`, { session: owner.token });
    expect(second.status).toBe(200);
    expect(second.text).not.toContain("Older changes");
    expect(second.text).toContain(">Newest<");
    expect((second.text.match(/<code>pod\.delete<\/code>/g) ?? []).length).toBe(2);

    // filters: the action, and a time range (UTC) that holds nothing
    const filtered = await page("/app/team/audit?action=env.set", { session: owner.token });
    expect(filtered.text).toContain("<code>env.set</code>");
    expect(filtered.text).not.toContain("<code>pod.delete</code>");
    expect(filtered.text).toContain('<option value="env.set" selected="">env.set</option>');
    expect(filtered.text).toContain(`/api/teams/${ownTeam}/audit?limit=50&amp;action=env.set`);
    const empty = await page("/app/team/audit?since=2020-01-01T00:00&until=2020-01-02T00:00", {
      session: owner.token,
    });
    expect(empty.text).toContain("No changes recorded with these filters.");
    expect(empty.text).toContain("since=2020-01-01T00%3A00%3A00Z");
    const bad = await page("/app/team/audit?since=not-a-time", { session: owner.token });
    expect(bad.status).toBe(200);
    expect(bad.text).toContain('role="alert"');

    // a member (the fixture team made active): the page says whose it is, and shows none of it
    await db.insert(auditEvents).values(row(team.id, { action: "member.add" }));
    const switched = await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    expect(switched.status, JSON.stringify(switched.body)).toBe(200);
    const asMember = await page("/app/team/audit", { session: member.token });
    expect(asMember.status).toBe(200);
    expect(asMember.text).toContain("The audit log is the team owner");
    expect(asMember.text).not.toContain("member.add</code>");
  });

  it("sends strangers to sign in", async () => {
    expect((await page("/app/team/audit")).status).toBe(302);
  });
});
