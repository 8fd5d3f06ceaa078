import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Dialog, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Files, type GitServer, startGitServer } from "../support/git-server";
import { httpGet } from "../support/http";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * A pod's Deploys, Databases and Backups tabs in Debian's Chromium against the real stack (Worker,
 * agent, Docker, ingress) and the local git server: connect a repository with the branch picker,
 * deploy and watch the build log stream in, roll back; install PostgreSQL and reveal its credentials;
 * back up and restore. What the browser does is the public API's doing, and the pod shows it. One
 * stack and one Node.js pod on the Build plan for the file's tests, which run in order.
 */

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const POD = "dash-data";
const REPO = "acme/site";

/** A small Node app (one local dependency: no registry needed) saying `text` on every path. */
const nodeApp = (text: string): Files => ({
  "package.json": JSON.stringify({
    name: "app",
    version: "1.0.0",
    scripts: { start: "node server.js" },
    dependencies: { greet: "file:./vendor/greet" },
  }),
  "vendor/greet/package.json": JSON.stringify({ name: "greet", version: "1.0.0", main: "index.js" }),
  "vendor/greet/index.js": 'module.exports = () => "greet";\n',
  "server.js": `require("http").createServer((req, res) => res.end("<h1>${text}</h1> " + require("greet")()))
  .listen(Number(process.env.PORT), "0.0.0.0");
`,
});

describe("a pod's Deploys, Databases and Backups tabs in a real browser", () => {
  let stack: Stack;
  let server: GitServer;
  let api: ApiClient;
  let token: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** the confirm() dialogs the page asked, accepted */
  const dialogs: string[] = [];

  const app = (path: string) => `${stack.api}/app/pods/${POD}${path}`;
  const site = () =>
    httpGet(stack.ingressPort, `${POD}.pods.localhost`).catch((e) => ({ status: 0, body: String(e) }));
  const siteShows = (text: string, timeoutMs = 60_000) =>
    waitFor(
      `${POD} to serve "${text}"`,
      async () => ((await site()).body.includes(text) ? true : undefined),
      timeoutMs,
    );
  /** the build log section's status line once the streamed deployment ended */
  const buildFinished = async () => {
    const status = page.locator("#build-log-status", { hasText: "Finished:" });
    await status.waitFor({ timeout: 240_000 });
    return (await status.textContent()) ?? "";
  };

  beforeAll(async () => {
    server = await startGitServer();
    await server.createRepo(REPO, nodeApp("site v1"), { message: "v1" });
    [stack, browser] = await Promise.all([startStack("ddata", { publicUrl: true }), launchChromium()]);
    const owner = await signUp(stack.api, "Data Owner");
    api = owner.api;
    token = owner.token;
    await waitForHostOnline(api);
    const created = await api.post("/api/pods", { name: POD, preset: "nodejs", plan_slug: "build" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await waitForPodStatus(api, POD, "running", 120_000);
    context = await browser.newContext();
    // PUBLIC_URL is the Worker's own address here: the dashboard answers on that host only
    await context.addCookies([{ name: "pod_session", value: owner.token, url: stack.api }]);
    page = await context.newPage();
    page.on("dialog", (d: Dialog) => {
      dialogs.push(d.message());
      void d.accept();
    });
  }, 300_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
    await server?.close();
  }, 120_000);

  let firstDeployment = "";

  it("connects the local git server with the branch picker, deploys, and streams the build log into the page", async () => {
    const res = await page.goto(app("/deploys"));
    expect(res?.status()).toBe(200);
    await page.getByLabel("Repository URL (https)").fill(server.url(REPO));
    await page.getByLabel("Branch").fill("");
    await page.getByRole("button", { name: "Load branches" }).click();
    await page.locator("[data-branches-status]", { hasText: "default main" }).waitFor({ timeout: 30_000 });
    expect(await page.getByLabel("Branch").inputValue()).toBe("main");
    // a build that talks for a few seconds, so its lines arrive while it runs
    await page
      .getByLabel("Build command (optional; empty: detected on each deploy)")
      .fill("for i in $(seq 1 15); do echo build step $i; sleep 1; done");
    await page.getByRole("button", { name: "Connect repository" }).click();
    await page.getByRole("button", { name: "Deploy now" }).waitFor({ timeout: 30_000 });

    // the webhook secret is a mask until Reveal asks the API
    const secret = page.locator("#webhook-secret");
    expect(await secret.textContent()).not.toMatch(/whs_/);
    await page.getByRole("button", { name: "Reveal secret" }).click();
    await expect.poll(() => secret.textContent(), { timeout: 10_000 }).toMatch(/^whs_/);
    const revealed = (await api.get(`/api/pods/${POD}/git/webhook-secret`)).body.webhook_secret;
    expect(await secret.textContent()).toBe(revealed);

    await page.getByRole("button", { name: "Deploy now" }).click();
    // the page reloads on the new deployment, whose log streams in while it runs
    const log = page.locator("pre[data-log-url]");
    await log.waitFor({ timeout: 30_000 });
    // lines appear while the deployment still runs (before the status line says it finished)
    const status = page.locator("#build-log-status");
    let linesWhileRunning = 0;
    const said: string[] = [];
    await waitFor(
      "the build to finish",
      async () => {
        const [text, line] = await Promise.all([log.textContent(), status.textContent()]);
        if (said.at(-1) !== line) said.push(line ?? "");
        if (line?.startsWith("Finished:")) return true;
        linesWhileRunning = Math.max(linesWhileRunning, (text ?? "").split("\n").filter(Boolean).length);
        return undefined;
      },
      240_000,
    );
    expect(linesWhileRunning, `status lines seen: ${said.join(" | ")}`).toBeGreaterThan(0);
    expect(await log.textContent()).toContain("build step 15");
    expect(await buildFinished()).toContain("success");
    expect(await log.textContent()).toMatch(/npm|install|build|start/i);
    await siteShows("site v1");
    const history = (await api.get(`/api/pods/${POD}/git/deployments`)).body.deployments;
    firstDeployment = history[0].id;
    // the history, refreshed when the log ended, shows it succeeded and serving
    await page.locator("#deploy-rows .status-success").first().waitFor({ timeout: 10_000 });
  }, 400_000);

  it("deploys a second commit, then rolls back to the first from the history", async () => {
    await server.commit(REPO, nodeApp("site v2"), { message: "v2" });
    await page.goto(app("/deploys"));
    await page.getByRole("button", { name: "Deploy now" }).click();
    await page.locator("pre[data-log-url]").waitFor({ timeout: 30_000 });
    expect(await buildFinished()).toContain("success");
    await siteShows("site v2");

    await page.goto(app("/deploys"));
    const row = page.locator("#deploy-rows tr", { has: page.locator(`input[value="${firstDeployment}"]`) });
    await row.getByRole("button", { name: "Roll back to this" }).click();
    expect(dialogs.at(-1)).toContain(`back to deployment ${firstDeployment}`);
    await page.locator("pre[data-log-url]").waitFor({ timeout: 30_000 });
    expect(await buildFinished()).toContain("success");
    await siteShows("site v1");
    const newest = (await api.get(`/api/pods/${POD}/git/deployments?limit=1`)).body.deployments[0];
    expect(newest).toMatchObject({ trigger: "rollback", rollback_of: firstDeployment, status: "success" });
  }, 400_000);

  it("installs PostgreSQL, shows it running without a reload, and reveals its credentials only when asked", async () => {
    await page.goto(app("/databases"));
    await page.getByLabel("Database to install").selectOption("postgresql");
    await page.getByRole("button", { name: "Install database" }).click();
    // the table is polled: installing turns running on the page
    await page.locator("#service-rows .status-running").waitFor({ timeout: 240_000 });
    const password = page.locator("#password-postgresql");
    expect(await password.textContent()).toContain("hidden until revealed");
    await page.getByRole("button", { name: "Reveal credentials" }).click();
    const creds = (await api.get(`/api/pods/${POD}/services/postgresql/credentials`)).body;
    await expect.poll(() => password.textContent(), { timeout: 10_000 }).toBe(creds.password);
    expect(await page.locator("#connection-postgresql").textContent()).toBe(
      `postgresql://pod_user:${encodeURIComponent(creds.password)}@127.0.0.1:5432/pod_user`,
    );
    await page.getByRole("button", { name: "Copy connection string" }).waitFor();
  }, 300_000);

  it("backs up with a note, imports the downloaded archive with a progress bar, and restores: the confirmation names what is replaced, and the backup's files come back", async () => {
    const marker = "/home/pod_user/app/marker.txt";
    const write = async (content: string) => {
      const res = await api.put(`/api/pods/${POD}/files/content`, { path: marker, content });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    const read = async () => (await api.get(`/api/pods/${POD}/files/content?path=${marker}`)).body.content;
    await write("as backed up\n");

    await page.goto(app("/backups"));
    const note = `before the change ${Date.now()}`;
    await page.getByRole("textbox", { name: "Note (optional)" }).first().fill(note);
    await page.getByRole("button", { name: "Back up now" }).click();
    // the page reloads; the table is polled while the backup is in progress
    const row = page.locator("#backup-rows tr", { hasText: note });
    await row.locator(".status-completed").waitFor({ timeout: 300_000 });
    expect(await row.textContent()).toContain("verified");
    const backup = (await api.get(`/api/pods/${POD}/backups`)).body.backups.find(
      (b: { note: string | null }) => b.note === note,
    );
    expect(await row.getByRole("link", { name: "Download" }).getAttribute("href")).toBe(
      `/api/pods/${POD}/backups/${backup.id}/download`,
    );

    // import the downloaded archive through the form: XMLHttpRequest's upload progress fills the bar
    const archive = await fetch(`${stack.api}/api/pods/${POD}/backups/${backup.id}/download`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(archive.status).toBe(200);
    const bytes = Buffer.from(await archive.arrayBuffer());
    // every value the bar takes, kept in sessionStorage across the reload that follows the upload
    await page.evaluate(`(() => {
      const bar = document.querySelector("form[data-upload] progress");
      new MutationObserver(() => {
        const seen = JSON.parse(sessionStorage.getItem("seen") || "[]");
        seen.push(bar.value + "/" + bar.max);
        sessionStorage.setItem("seen", JSON.stringify(seen));
      }).observe(bar, { attributes: true, attributeFilter: ["value", "max"] });
    })()`);
    await page.getByLabel("Backup archive (.tar.gz, at most 2 GB)").setInputFiles({
      name: "site.tar.gz",
      mimeType: "application/gzip",
      buffer: bytes,
    });
    await page.locator("form[data-upload]").getByLabel("Note (optional)").fill("imported copy");
    await page.getByRole("button", { name: "Upload and import" }).click();
    const imported = page.locator("#backup-rows tr", { hasText: "imported copy" });
    await imported.waitFor({ timeout: 60_000 });
    const seen = JSON.parse((await page.evaluate(`sessionStorage.getItem("seen")`)) as string) as string[];
    // the bar ends full; the multipart body is the archive plus its boundaries and the note
    const [sent, total] = (seen.at(-1) ?? "0/0").split("/").map(Number);
    expect(sent).toBe(total);
    expect(total).toBeGreaterThan(bytes.length);
    expect(await imported.textContent()).toContain("import");
    await imported.locator(".status-completed").waitFor({ timeout: 300_000 });

    await write("changed after the backup\n");
    await row.getByRole("button", { name: "Restore" }).click();
    expect(dialogs.at(-1)).toMatch(
      /REPLACES the pod's app files \(\/home\/pod_user\/app\) and the contents of its databases/,
    );
    await row.locator("[data-status]", { hasText: "Restoring" }).waitFor({ timeout: 30_000 });
    await waitFor(
      "the restore to end",
      async () => {
        const events = (await api.get(`/api/pods/${POD}/events?limit=50`)).body.events as { type: string }[];
        if (events.some((e) => e.type === "restore_failed"))
          throw new Error(JSON.stringify(events.slice(0, 5)));
        return events.some((e) => e.type === "restore_completed") ? true : undefined;
      },
      300_000,
    );
    expect(await read()).toBe("as backed up\n");
  }, 700_000);

  it("has no serious or critical accessibility finding on the three tabs with their rows (axe-core)", async () => {
    // axe is the test's own script: this context alone bypasses the page's CSP to inject it
    const audit = await browser.newContext({ bypassCSP: true, viewport: { width: 390, height: 844 } });
    await audit.addCookies([{ name: "pod_session", value: token, url: stack.api }]);
    const findings: string[] = [];
    for (const tab of ["/deploys", "/databases", "/backups"]) {
      const p = await audit.newPage();
      expect((await p.goto(app(tab)))?.status()).toBe(200);
      await p.addScriptTag({ content: axeSource });
      // a string, evaluated in the page: the Node project's types have no DOM
      const violations = (await p.evaluate("axe.run(document).then((r) => r.violations)")) as {
        id: string;
        impact: string | null;
        nodes: { target: string[] }[];
      }[];
      for (const v of violations)
        if (v.impact === "serious" || v.impact === "critical")
          findings.push(
            `${tab}: ${v.id} (${v.impact}) at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
          );
      // 390 px wide: the page itself does not scroll sideways (tables scroll in their own box)
      const wide = await p.evaluate(`[...document.querySelectorAll("body *")]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest(".table-wrap, nav.tabs, pre"))
        .map((el) => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().right))`);
      expect(wide, tab).toEqual([]);
      expect(await p.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), tab).toBe(true);
      await p.close();
    }
    await audit.close();
    expect(findings).toEqual([]);
  }, 120_000);
});
