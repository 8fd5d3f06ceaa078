import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertPod } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * Every table the dashboard draws comes from `DataTable` (worker/dashboard/components/data-table.tsx):
 * at 390 px a table scrolls sideways inside its box, so the box must be a named region a keyboard can
 * focus (axe's scrollable-region-focusable), and the table carries the same name as its caption. Read
 * off the pages that list things, empty (the state axe flagged on the Deploys and Backups tabs) and
 * not.
 */

const WRAPPED =
  /<section class="table-wrap" aria-label="([^"]+)" tabindex="0"><table[^>]*><caption class="visually-hidden">([^<]+)<\/caption>/g;

/** The tables of a page: each one's region name and caption, and how many tables there are in all. */
function tables(html: string) {
  const wrapped = [...html.matchAll(WRAPPED)].map((m) => ({ region: m[1] ?? "", caption: m[2] ?? "" }));
  return {
    wrapped,
    all: html.split("<table").length - 1,
    boxes: html.split('class="table-wrap"').length - 1,
  };
}

describe("the dashboard's tables", () => {
  it("puts every table in a focusable region named for it, on the team, account, billing and pods pages and a pod's tabs", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id });
    await env.DB.prepare("UPDATE pods SET plan_slug = 'launch' WHERE id = ?").bind(pod.id).run();
    const paths = [
      "/app",
      "/app/team",
      "/app/account",
      "/app/billing",
      "/app/affiliates",
      `/app/pods/${pod.name}/deploys`,
      `/app/pods/${pod.name}/backups`,
      `/app/pods/${pod.name}/databases`,
      `/app/pods/${pod.name}/events`,
    ];
    const seen: string[] = [];
    for (const path of paths) {
      const res = await page(path, { session: user.session });
      expect(res.status, path).toBe(200);
      const t = tables(res.text);
      expect(t.all, `${path}: a table outside a DataTable`).toBe(t.wrapped.length);
      expect(t.boxes, `${path}: a scroll box outside a DataTable`).toBe(t.wrapped.length);
      for (const w of t.wrapped) expect(w.caption, path).toBe(w.region);
      seen.push(...t.wrapped.map((w) => w.region));
    }
    // the tables axe flagged at 390 px are among them, empty ones included
    expect(seen).toEqual(expect.arrayContaining(["Pods", "Members", "Deploy history", "Backups", "Events"]));
  });

  it("says what is not there yet in an empty table's one row", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id });
    const deploys = await page(`/app/pods/${pod.name}/deploys`, { session: user.session });
    expect(deploys.text).toContain('<td colspan="7" class="empty">No deployments yet.</td>');
    const backups = await page(`/app/pods/${pod.name}/backups`, { session: user.session });
    expect(backups.text).toContain('<td colspan="7" class="empty">No backups yet.</td>');
  });
});
