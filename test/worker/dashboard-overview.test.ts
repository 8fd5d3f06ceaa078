import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertHost, insertPod } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * The Overview tab's live facts (worker/dashboard/routes/pod-overview.tsx): the page polls
 * `/app/pods/{name}/facts` every 2 s, and that fragment renders the same cards from the pod's
 * current row (status, URL, plan and resources, SSH command, health), for the caller's team only.
 */

const EVIL = "<img src=x onerror=alert(1)>";

async function setup() {
  const [user, host] = await Promise.all([signedIn("Overview Live"), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
  return { user, pod };
}

describe("the Overview's live facts", () => {
  it("polls the facts fragment every 1.5 s, and the fragment shows what changed since the page was drawn", async () => {
    const { user, pod } = await setup();
    const html = (await page(`/app/pods/${pod.name}`, { session: user.session })).text;
    expect(html).toContain(
      `hx-get="/app/pods/${pod.name}/facts" hx-trigger="every 1500ms" hx-swap="innerHTML"`,
    );
    expect(html).toContain("/app/assets/overview.js");
    expect(html).toContain("has no SSH port allocated yet");

    // the pod changes meanwhile: stopped, resized, an SSH port, a diagnosis and a metrics sample
    const diagnosis = {
      class: "crash_loop",
      title: `Crashing: ${EVIL}`,
      detail: "The app exits at start",
      fix: "Read the error log",
      auto_fixable: false,
      confidence: 0.8,
    };
    await env.DB.batch([
      env.DB.prepare(
        "UPDATE pods SET status = 'stopped', plan_slug = 'build', ssh_port = 2299, app_health_diagnosis = ? WHERE id = ?",
      ).bind(JSON.stringify(diagnosis), pod.id),
      env.DB.prepare(
        "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, 33.5, 61, 4096, 0, 0)",
      ).bind(pod.id, new Date().toISOString()),
    ]);
    const facts = await page(`/app/pods/${pod.name}/facts`, { session: user.session });
    expect(facts.status).toBe(200);
    expect(facts.text).not.toContain("<html");
    expect(facts.text).toContain('class="badge status-stopped"');
    expect(facts.text).toContain(`http://${pod.name}.${env.POD_DOMAIN}`);
    expect(facts.text).toContain("Build · $12.00/month");
    expect(facts.text).toContain("CPU 33.5 %, memory 61 %");
    expect(facts.text).toContain('data-copy="ssh -p 2299 pod_user@ssh.example.test"');
    expect(facts.text).toContain("Crashing: &lt;img src=x onerror=alert(1)&gt;");
    expect(facts.text).not.toContain(EVIL);
    // the actions and the delete form stay outside the polled region
    expect(facts.text).not.toContain("data-must-equal");
  });

  it("is a 404 for another team's pod, exactly like a missing one, and sends the signed-out to sign in", async () => {
    const { pod } = await setup();
    const stranger = await signedIn("Overview Stranger");
    const foreign = await page(`/app/pods/${pod.name}/facts`, { session: stranger.session });
    const missing = await page("/app/pods/no-such-pod-here/facts", { session: stranger.session });
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.text).not.toContain(pod.name);
    expect(foreign.text).toBe(missing.text);
    const out = await page(`/app/pods/${pod.name}/facts`);
    expect(out.status).toBe(302);
    expect(out.headers.get("location")).toContain("/app/sign-in?next=");
  });
});
