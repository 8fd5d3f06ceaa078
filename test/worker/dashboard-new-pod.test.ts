import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { insertPod, uniquePodName } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

const MINUTE = 60_000;

async function insertSample(podId: string, agoMs: number, cpu: number, memory: number) {
  await env.DB.prepare(
    "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, ?, ?, 0, 0, 0)",
  )
    .bind(podId, new Date(Date.now() - agoMs).toISOString(), cpu, memory)
    .run();
}

async function insertDeployment(podId: string, status: string, createdAt: string, finishedAt: string | null) {
  const stage = status === "deploying" ? "running" : "done";
  await env.DB.prepare(
    "INSERT INTO deployments (id, pod_id, trigger, status, stage, created_at, finished_at) VALUES (?, ?, 'push', ?, ?, ?, ?)",
  )
    .bind(newId("dep"), podId, status, stage, createdAt, finishedAt)
    .run();
}

/** The `<tr>` of one pod in a page or fragment. */
const rowOf = (html: string, name: string) => {
  const start = html.indexOf(`<tr data-pod="${name}">`);
  expect(start, `row of ${name}`).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf("</tr>", start));
};

describe("the pods list", () => {
  it("shows each pod's plan with its price, last deploy and a CPU/memory sparkline with its words", async () => {
    const user = await signedIn();
    const teamId = user.user.active_team_id;
    const busy = await insertPod({ hostId: null, teamId });
    const quiet = await insertPod({ hostId: null, teamId });
    await insertSample(busy.id, 50 * MINUTE, 10, 40);
    await insertSample(busy.id, 20 * MINUTE, 80, 45);
    await insertSample(busy.id, 2 * MINUTE, 30, 50);
    await insertSample(busy.id, 3 * 60 * MINUTE, 99, 99); // older than the sparkline's hour
    await insertDeployment(busy.id, "success", "2026-01-01T10:00:00.000Z", "2026-01-01T10:01:00.000Z");
    await insertDeployment(busy.id, "failed", "2026-01-02T10:00:00.000Z", "2026-01-02T10:02:00.000Z");

    const res = await page("/app", { session: user.session });
    expect(res.status).toBe(200);
    const row = rowOf(res.text, busy.name);
    expect(row).toContain("Launch");
    expect(row).toContain("$5/mo");
    // the newest deployment, its status in words and its time
    expect(row).toContain('class="badge status-failed">failed</span>');
    expect(row).toContain('datetime="2026-01-02T10:02:00.000Z"');
    expect(row).not.toContain("status-success");
    // the chart, with a text alternative that leaves out the 3-hour-old 99 %
    expect(row).toMatch(/<svg class="sparkline"[^>]* role="img"/);
    expect(row).toContain(
      'aria-label="CPU over the last hour: 10 % to 80 %, now 30 %; memory: 40 % to 50 %, now 50 %"',
    );
    expect(row).toMatch(/<path class="spark-cpu" d="M[\d. ]+/);
    expect(row).toContain("CPU 30 %");
    expect(row).toContain("mem 50 %");

    const none = rowOf(res.text, quiet.name);
    expect(none).toContain("no samples yet");
    expect(none).not.toContain("<svg");
    expect(res.text).toContain("/api/pods/{name}/metrics/history?hours=1");
  });

  it("refreshes status, last deploy and sparkline in the rows fragment", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status: "creating" });
    const before = await page("/app/pods/rows?offset=0&limit=50", { session: user.session });
    expect(rowOf(before.text, pod.name)).toContain("status-creating");
    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(pod.id).run();
    await insertSample(pod.id, MINUTE, 12, 34);
    await insertDeployment(pod.id, "deploying", new Date().toISOString(), null);
    const after = rowOf(
      (await page("/app/pods/rows?offset=0&limit=50", { session: user.session })).text,
      pod.name,
    );
    expect(after).toContain('class="badge status-running"');
    expect(after).toContain('class="badge status-deploying"');
    expect(after).toContain("CPU 12 %");
  });

  it("escapes a pod's name that is markup, wherever the list shows it", async () => {
    const user = await signedIn();
    const evil = `<img src=x onerror=alert(1)>${uniquePodName()}`;
    // no API call can make such a name (the name rule): written straight into D1
    await insertPod({ hostId: null, teamId: user.user.active_team_id, name: evil });
    const res = await page("/app", { session: user.session });
    expect(res.text).not.toContain("<img src=x");
    expect(res.text).toContain("&lt;img src=x onerror=alert(1)&gt;");
  });

  it("shows neither another team's pods nor their deploys or metrics", async () => {
    const owner = await signedIn();
    const other = await signedIn();
    const theirs = await insertPod({ hostId: null, teamId: owner.user.active_team_id });
    await insertSample(theirs.id, MINUTE, 77, 77);
    const res = await page("/app/pods/rows?offset=0&limit=50", { session: other.session });
    expect(res.text).not.toContain(theirs.name);
    expect(res.text).not.toContain("77 %");
  });

  it("keeps the rows fragment cheap for a team of 1,000 pods: one page, the same few queries", async () => {
    const user = await signedIn();
    const teamId = user.user.active_team_id;
    const now = Date.now();
    const statements = [];
    for (let i = 0; i < 1000; i++) {
      const id = newId("pod");
      const at = new Date(now - i * 1000).toISOString();
      statements.push(
        env.DB.prepare(
          `INSERT INTO pods (id, name, team_id, preset, status, plan_slug, region, created_at, updated_at)
           VALUES (?, ?, ?, 'static', 'running', 'build', 'eu-west', ?, ?)`,
        ).bind(id, `${uniquePodName()}k`, teamId, at, at),
      );
      // twelve samples in the hour and three deployments for each pod
      for (let s = 0; s < 12; s++) {
        statements.push(
          env.DB.prepare(
            "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, ?, 20, 0, 0, 0)",
          ).bind(id, new Date(now - s * 5 * MINUTE - 1000).toISOString(), s),
        );
      }
      for (let d = 0; d < 3; d++) {
        statements.push(
          env.DB.prepare(
            "INSERT INTO deployments (id, pod_id, trigger, status, stage, created_at) VALUES (?, ?, 'push', 'success', 'done', ?)",
          ).bind(newId("dep"), id, new Date(now - d * MINUTE).toISOString()),
        );
      }
    }
    for (let i = 0; i < statements.length; i += 500) await env.DB.batch(statements.slice(i, i + 500));

    const started = performance.now();
    const rows = await page("/app/pods/rows?offset=950&limit=50", { session: user.session });
    const elapsed = performance.now() - started;
    expect(rows.status).toBe(200);
    expect(rows.text.match(/<tr data-pod=/g)?.length).toBe(50);
    expect(rows.text.match(/<svg class="sparkline"/g)?.length).toBe(50);
    expect(rows.text.match(/status-success/g)?.length).toBe(50);
    expect(rows.text).toContain("$12/mo");
    // generous for a loaded CI machine; one query per pod would be 100 round trips more
    expect(elapsed).toBeLessThan(1500);
    console.log(`rows fragment, page 20 of 1,000 pods: ${elapsed.toFixed(0)} ms`);
  });
});

async function insertEvent(podId: string, type: string, message: string, at: string) {
  await env.DB.prepare(
    "INSERT INTO pod_events (id, pod_id, type, message, created_at) VALUES (?, ?, ?, ?, ?)",
  )
    .bind(newId("evt"), podId, type, message, at)
    .run();
}

describe("the new pod page", () => {
  it("offers every plan with its price, the presets, the regions and four sources, with their curl lines", async () => {
    const user = await signedIn();
    const res = await page("/app/new", { session: user.session });
    expect(res.status).toBe(200);
    for (const [plan, price] of [
      ["Launch", "$5/mo"],
      ["Build", "$12/mo"],
      ["Grow", "$24/mo"],
      ["Scale", "$48/mo"],
      ["Turbo", "$96/mo"],
    ]) {
      expect(res.text).toMatch(new RegExp(`<strong>${plan}</strong> <span class="price">\\${price}</span>`));
    }
    expect(res.text).toContain('<input type="radio" name="plan_slug" value="launch" checked=""');
    for (const preset of ["static", "php", "nodejs", "python"])
      expect(res.text).toContain(`value="${preset}"`);
    expect(res.text).toContain('<option value="">Nearest to you</option>');
    // no host is connected in this test: every region is there, none can take a pod now
    expect(res.text).toMatch(/<option value="[a-z-]+" disabled="">[^<]+\(no capacity now\)<\/option>/);
    for (const source of ["empty", "zip", "repo", "import"]) {
      expect(res.text).toContain(`name="source" value="${source}"`);
    }
    expect(res.text).toMatch(/<section class="source-panel" data-source-panel="zip" hidden="">/);
    expect(res.text).toMatch(/<script src="\/app\/assets\/new-pod\.js\?v=\w+" defer=""><\/script>/);
    // the API behind each source
    expect(res.text).toContain("curl -X POST &#39;http://localhost:8787/api/pods&#39;");
    expect(res.text).toContain("-F &#39;zip=@site.zip&#39; -F &#39;plan_slug=launch&#39;");
    expect(res.text).toContain("/api/repos/branches?repo_url=");
    expect(res.text).toContain("/api/pods/from-repo");
    expect(res.text).toContain("&quot;dry_run&quot;:true");
  });

  it("opens on the source the link names", async () => {
    const user = await signedIn();
    const res = await page("/app/new?source=import", { session: user.session });
    expect(res.text).toContain('name="source" value="import" checked=""');
    expect(res.text).toMatch(/<section class="source-panel" data-source-panel="import">/);
    const unknown = await page("/app/new?source=<x>", { session: user.session });
    expect(unknown.text).toContain('name="source" value="empty" checked=""');
  });

  it("serves its script, small", async () => {
    const user = await signedIn();
    const html = (await page("/app/new", { session: user.session })).text;
    const src = html.match(/src="(\/app\/assets\/new-pod\.js\?v=\w+)"/)?.[1] ?? "";
    const script = await page(src);
    expect(script.status).toBe(200);
    expect(script.text).toContain("/api/pods/from-zip");
    expect(script.text.length).toBeLessThan(50 * 1024);
  });

  it("follows a new pod's progress every second, oldest event first, until it runs", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status: "creating" });
    await insertEvent(pod.id, "created", "pod created", "2026-01-01T10:00:00.000Z");
    await insertEvent(pod.id, "progress", "container started", "2026-01-01T10:00:05.000Z");
    const creating = await page(`/app/new/progress/${pod.name}`, { session: user.session });
    expect(creating.status).toBe(200);
    expect(creating.text).toMatch(/^<section id="new-pod-progress"/);
    expect(creating.text).toContain(`hx-get="/app/new/progress/${pod.name}" hx-trigger="every 1s"`);
    expect(creating.text).toContain('class="badge status-creating"');
    expect(creating.text.indexOf("pod created")).toBeLessThan(creating.text.indexOf("container started"));

    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(pod.id).run();
    const running = await page(`/app/new/progress/${pod.name}`, { session: user.session });
    expect(running.text).not.toContain("hx-trigger");
    expect(running.text).toContain('class="badge status-running"');
    expect(running.text).toContain(`<a href="/app/pods/${pod.name}">Open its page</a>`);
  });

  it("shows why a creation failed, and stops polling", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status: "error" });
    await insertEvent(
      pod.id,
      "error",
      "creating the pod failed: no host can take it",
      "2026-01-01T10:00:00.000Z",
    );
    const res = await page(`/app/new/progress/${pod.name}`, { session: user.session });
    expect(res.text).not.toContain("hx-trigger");
    expect(res.text).toContain(
      '<p class="form-error" role="alert">creating the pod failed: no host can take it</p>',
    );
  });
});

describe("the new pod page against an attacker", () => {
  it("escapes event text that is markup (a remote page's title, a reason)", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status: "error" });
    const evil = `<script>alert(document.cookie)</script><img src=x onerror=alert(1)>`;
    await insertEvent(pod.id, "error", evil, "2026-01-01T10:00:00.000Z");
    const res = await page(`/app/new/progress/${pod.name}`, { session: user.session });
    expect(res.text).not.toContain("<script>alert");
    expect(res.text).not.toContain("<img src=x");
    expect(res.text).toContain("&lt;script&gt;alert(document.cookie)&lt;/script&gt;");
    const missing = await page(`/app/new/progress/${encodeURIComponent("<b>x</b>")}`, {
      session: user.session,
    });
    expect(missing.status).toBe(404);
    expect(missing.text).not.toContain("<b>x</b>");
  });

  it("answers another team's pod with the same 404 as a missing one, and none of its events", async () => {
    const owner = await signedIn();
    const stranger = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: owner.user.active_team_id, status: "creating" });
    await insertEvent(pod.id, "progress", "secret-step-name", "2026-01-01T10:00:00.000Z");
    const theirs = await page(`/app/new/progress/${pod.name}`, { session: stranger.session });
    const missing = await page("/app/new/progress/no-such-pod-here", { session: stranger.session });
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(theirs.text).not.toContain("secret-step-name");
    expect(theirs.text.replace(pod.name, "NAME")).toBe(missing.text.replace("no-such-pod-here", "NAME"));
  });

  it("sends a signed-out browser to sign in, for the page and its fragment", async () => {
    const res = await page("/app/new?source=zip");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/app/sign-in?next=%2Fapp%2Fnew%3Fsource%3Dzip");
    expect((await page("/app/new/progress/any-pod")).status).toBe(302);
  });

  it("carries the strict CSP and no inline script", async () => {
    const user = await signedIn();
    const res = await page("/app/new", { session: user.session });
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    for (const tag of res.text.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/ src="\/app\/assets\//);
    expect(res.text).not.toMatch(/ style="/);
    expect(res.text).not.toMatch(/ on[a-z]+="/);
  });
});
