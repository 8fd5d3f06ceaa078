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
