import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { sealPassword } from "../../worker/services/services/passwords";
import { insertPod } from "./support/agent";
import { call } from "./support/client";
import { page, signedIn } from "./support/dashboard";

/**
 * A pod's Deploys, Databases and Backups tabs (worker/dashboard/routes/pod-{deploys,databases,
 * backups}.tsx), rendered with real rows: what each shows, the API calls its forms and scripts make,
 * the curl lines, and what an attacker gets — markup in a commit message or a note is text, another
 * team's pod is the 404 page, and the webhook secret and database passwords are in no page until the
 * Reveal button asks the API for them.
 */

const EVIL = "<img src=x onerror=alert(1)>";
const ESCAPED = "&lt;img src=x onerror=alert(1)&gt;";

async function setup(plan = "launch") {
  const user = await signedIn();
  const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id });
  await env.DB.prepare("UPDATE pods SET plan_slug = ? WHERE id = ?").bind(plan, pod.id).run();
  return { user, pod, as: { token: user.token } };
}

const iso = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();

async function insertDeployment(
  podId: string,
  d: { status: string; release?: string; sha?: string; message?: string; ago: number; took?: number },
) {
  const id = newId("dep");
  const finished = d.status === "deploying" ? null : iso(d.ago - (d.took ?? 1));
  await env.DB.prepare(
    `INSERT INTO deployments (id, pod_id, trigger, status, stage, commit_sha, commit_message, release, created_at, started_at, finished_at)
     VALUES (?, ?, 'manual', ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
    .bind(
      id,
      podId,
      d.status,
      d.status === "deploying" ? "running" : "done",
      d.sha ?? null,
      d.message ?? null,
      d.release ?? null,
      iso(d.ago),
      iso(d.ago),
      finished,
    )
    .run();
  return id;
}

async function insertBackup(
  podId: string,
  b: { status: string; note?: string; size?: number; verified?: boolean },
) {
  const id = newId("bk");
  await env.DB.prepare(
    `INSERT INTO backups (id, pod_id, note, status, trigger, size, sha256, object_key, verified_at, created_at, completed_at)
     VALUES (?, ?, ?, ?, 'manual', ?, ?, ?, ?, ?, ?)`,
  )
    .bind(
      id,
      podId,
      b.note ?? null,
      b.status,
      b.size ?? null,
      b.size ? "a".repeat(64) : null,
      `backups/${podId}/${id}.tar.gz`,
      b.verified ? iso(1) : null,
      iso(5),
      b.status === "completed" ? iso(4) : null,
    )
    .run();
  return id;
}

describe("the Deploys tab", () => {
  it("offers to connect a repository (with the branch picker) when none is connected", async () => {
    const { user, pod } = await setup();
    const res = await page(`/app/pods/${pod.name}/deploys`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/git"`);
    expect(res.text).toContain('name="repo_url"');
    expect(res.text).toContain('type="password"');
    expect(res.text).toContain('data-branches="branch-list"');
    expect(res.text).toContain("No deployments yet.");
    expect(res.text).toMatch(/\/app\/assets\/pod-data\.js\?v=/);
    expect(res.text).toContain(`curl -X POST &#39;http://localhost:8787/api/pods/${pod.name}/git&#39;`);
  });

  it("shows the repository, the history with durations and rollback targets, and the build log; the webhook secret only on Reveal", async () => {
    const { user, pod, as } = await setup();
    const connected = await call(
      "POST",
      `/api/pods/${pod.name}/git`,
      { repo_url: "https://git.example.com/acme/site.git", branch: "main" },
      as,
    );
    expect(connected.status, JSON.stringify(connected.body)).toBe(201);
    const secret = connected.body.webhook_secret as string;
    await env.DB.prepare("UPDATE git_configs SET kept_releases = ? WHERE pod_id = ?")
      .bind(JSON.stringify(["rel_old", "rel_new"]), pod.id)
      .run();
    const old = await insertDeployment(pod.id, {
      status: "success",
      release: "rel_old",
      sha: "a".repeat(40),
      ago: 30,
    });
    const gone = await insertDeployment(pod.id, {
      status: "success",
      release: "rel_gone",
      sha: "b".repeat(40),
      ago: 20,
    });
    const failed = await insertDeployment(pod.id, {
      status: "failed",
      sha: "c".repeat(40),
      message: EVIL,
      ago: 15,
    });
    const serving = await insertDeployment(pod.id, {
      status: "success",
      release: "rel_new",
      sha: "d".repeat(40),
      message: "the newest",
      ago: 10,
      took: 2,
    });
    await env.DB.prepare(
      "INSERT INTO deployment_log_chunks (deployment_id, seq, chunk, bytes) VALUES (?, 0, ?, 20)",
    )
      .bind(serving, `npm run build\n${EVIL}\ndone\n`)
      .run();

    const res = await page(`/app/pods/${pod.name}/deploys`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("https://git.example.com/acme/site.git");
    expect(res.text).toContain(`http://localhost:8787/api/webhooks/git/${pod.name}`);
    // the secret is not in the page: the Reveal button asks the API for it
    expect(res.text).not.toContain(secret);
    expect(res.text).toContain(`data-reveal-from="/api/pods/${pod.name}/git/webhook-secret"`);
    const revealed = await call("GET", `/api/pods/${pod.name}/git/webhook-secret`, undefined, as);
    expect(revealed.body.webhook_secret).toBe(secret);

    // the history: statuses in words, the short commit, durations, and rollback only to a kept,
    // earlier successful release (not the serving one, not one the host no longer keeps, not a failure)
    expect(res.text).toContain("dddddddd");
    expect(res.text).toContain("1 min 0 s");
    expect(res.text).toContain("2 min 0 s");
    expect(res.text).toContain(ESCAPED);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain(`value="${old}"`);
    for (const id of [serving, gone, failed])
      expect(res.text).not.toContain(`name="deployment_id" value="${id}"`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/git/rollback"`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/git/deploy"`);
    expect(res.text).toMatch(/serving/);
    // the newest deployment's log, ended, rendered whole and escaped
    expect(res.text).toContain(`Build log of <code>${serving}</code>`);
    expect(res.text).toContain(`npm run build\n${ESCAPED}`);
    expect(res.text).toContain(
      `curl -X POST &#39;http://localhost:8787/api/pods/${pod.name}/git/deploy&#39;`,
    );
    // nothing runs: the history is not polled
    expect(res.text).toMatch(/<tbody id="deploy-rows"[^>]*hx-trigger="refresh"/);
  });

  it("streams a running deployment's log from the API and polls the history while it runs", async () => {
    const { user, pod, as } = await setup();
    await call("POST", `/api/pods/${pod.name}/git`, { repo_url: "https://git.example.com/a/b.git" }, as);
    const running = await insertDeployment(pod.id, { status: "deploying", ago: 1 });
    const res = await page(`/app/pods/${pod.name}/deploys`, { session: user.session });
    expect(res.text).toContain(`data-log-url="/api/pods/${pod.name}/git/deployments/${running}/log"`);
    expect(res.text).toMatch(/<tbody id="deploy-rows"[^>]*hx-trigger="every 2s, refresh"/);
    const rows = await page(`/app/pods/${pod.name}/deploys/rows`, { session: user.session });
    expect(rows.status).toBe(200);
    expect(rows.text).toMatch(/^<tbody id="deploy-rows"/);
    expect(rows.text).toContain('class="badge status-deploying"');
    // a deployment of another pod named in the query is the 404 page
    const other = await setup();
    const foreign = await insertDeployment(other.pod.id, { status: "success", ago: 3 });
    const wrong = await page(`/app/pods/${pod.name}/deploys?deployment=${foreign}`, {
      session: user.session,
    });
    expect(wrong.status).toBe(404);
  });
});

describe("the Databases tab", () => {
  it("says the plan has no database services and offers no install on Launch", async () => {
    const { user, pod } = await setup("launch");
    const res = await page(`/app/pods/${pod.name}/databases`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("Build plan or higher");
    expect(res.text).not.toContain("Install database");
  });

  it("lists the services live, reveals credentials only on request, and removes with a confirmation", async () => {
    const { user, pod, as } = await setup("build");
    const password = "S3cret-Pa55word_0123456789abcdefg";
    const sealed = await sealPassword(env, { podId: pod.id, serviceType: "postgresql" }, password);
    if (!sealed.ok) throw new Error(sealed.message);
    const now = new Date().toISOString();
    await env.DB.prepare(
      `INSERT INTO pod_services (id, pod_id, service_type, status, version, port, password_encrypted, error_msg, created_at, updated_at)
       VALUES (?, ?, 'postgresql', 'running', '14.23', 5432, ?, NULL, ?, ?)`,
    )
      .bind(newId("svc"), pod.id, sealed.value, now, now)
      .run();

    const res = await page(`/app/pods/${pod.name}/databases`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain('class="badge status-running"');
    expect(res.text).toContain("14.23");
    expect(res.text).not.toContain(password);
    expect(res.text).not.toContain(encodeURIComponent(password));
    expect(res.text).toContain(`data-reveal-from="/api/pods/${pod.name}/services/postgresql/credentials"`);
    expect(res.text).toContain(
      'data-template="postgresql://{username|url}:{password|url}@{host}:{port}/{database|url}"',
    );
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/services/postgresql"`);
    expect(res.text).toContain('data-confirm="Remove PostgreSQL from pod');
    // the install form offers only what is not installed yet
    expect(res.text).toContain('<option value="mysql">');
    expect(res.text).not.toContain('<option value="postgresql">');
    expect(res.text).toContain(`curl &#39;http://localhost:8787/api/pods/${pod.name}/services&#39;`);
    const creds = await call("GET", `/api/pods/${pod.name}/services/postgresql/credentials`, undefined, as);
    expect(creds.body).toMatchObject({ password, username: "pod_user", port: 5432 });

    const rows = await page(`/app/pods/${pod.name}/databases/rows`, { session: user.session });
    expect(rows.text).toMatch(/^<tbody id="service-rows"[^>]*hx-trigger="every 2s, refresh"/);
    // the pod stops: the live row says so
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    const stopped = await page(`/app/pods/${pod.name}/databases/rows`, { session: user.session });
    expect(stopped.text).toContain('class="badge status-stopped"');
    expect(stopped.text).not.toContain(password);
  });
});

describe("the Backups tab", () => {
  it("lists backups with size, verification and trigger, and offers create, restore, download, import and the schedule", async () => {
    const { user, pod } = await setup("build");
    const done = await insertBackup(pod.id, {
      status: "completed",
      note: EVIL,
      size: 1_500_000,
      verified: true,
    });
    const broken = await insertBackup(pod.id, { status: "failed", note: "broke" });
    const res = await page(`/app/pods/${pod.name}/backups`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("1 of 5 kept");
    expect(res.text).toContain("1.5 MB");
    expect(res.text).toContain('class="badge status-verified"');
    expect(res.text).toContain('class="badge status-failed"');
    expect(res.text).toContain(ESCAPED);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain(`href="/api/pods/${pod.name}/backups/${done}/download"`);
    expect(res.text).not.toContain(`/backups/${broken}/download`);
    expect(res.text).not.toContain(`/backups/${broken}/restore`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/backups/${done}/restore"`);
    // the restore's confirmation names what it replaces
    expect(res.text).toMatch(
      /data-confirm="Restore pod [^"]*REPLACES the pod&#39;s app files \(\/home\/pod_user\/app\) and the contents of its databases/,
    );
    expect(res.text).toContain(`data-upload="/api/pods/${pod.name}/backups/import"`);
    expect(res.text).toContain("<progress");
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/backups/schedule"`);
    expect(res.text).toContain('max="5"');
    expect(res.text).toContain(`curl -X POST &#39;http://localhost:8787/api/pods/${pod.name}/backups&#39;`);
    expect(res.text).toMatch(/<tbody id="backup-rows"[^>]*hx-trigger="refresh"/);

    await insertBackup(pod.id, { status: "in_progress" });
    const rows = await page(`/app/pods/${pod.name}/backups/rows`, { session: user.session });
    expect(rows.text).toMatch(/^<tbody id="backup-rows"[^>]*hx-trigger="every 2s, refresh"/);
    expect(rows.text).toContain("pending");
  });
});

describe("the tabs against an attacker", () => {
  it("answers another team's pod with the 404 page and nothing of it, on every tab and fragment", async () => {
    const victim = await setup("build");
    await call(
      "POST",
      `/api/pods/${victim.pod.name}/git`,
      { repo_url: "https://git.example.com/v/s.git" },
      victim.as,
    );
    await insertBackup(victim.pod.id, { status: "completed", note: "victim's note", size: 10 });
    const eve = await signedIn("Eve");
    for (const tab of ["deploys", "deploys/rows", "databases", "databases/rows", "backups", "backups/rows"]) {
      const res = await page(`/app/pods/${victim.pod.name}/${tab}`, { session: eve.session });
      expect(res.status, tab).toBe(404);
      expect(res.text, tab).not.toContain("git.example.com");
      expect(res.text, tab).not.toContain("victim&#39;s note");
    }
  });

  it("sends a signed-out browser to sign-in", async () => {
    const { pod } = await setup();
    for (const tab of ["deploys", "databases", "backups", "deploys/rows"]) {
      const res = await page(`/app/pods/${pod.name}/${tab}`);
      expect(res.status, tab).toBe(302);
      expect(res.headers.get("location"), tab).toBe(
        `/app/sign-in?next=${encodeURIComponent(`/app/pods/${pod.name}/${tab}`)}`,
      );
    }
  });
});
