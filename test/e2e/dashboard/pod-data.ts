import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { Files } from "../../support/git-server";
import { httpGet } from "../../support/http";
import { auditPages } from "../support/dashboard";
import { waitFor } from "../support/stack";
import { app, type Journey, need } from "./journey";

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

/**
 * The Node.js pod's Deploys tab against the local git server: connect a repository with the branch
 * picker, reveal the webhook secret, deploy and watch the build log stream in, roll back.
 */
export function deploysSteps(j: Journey) {
  describe("deploys", () => {
    const site = () =>
      httpGet(j.stack.edgePort, `${j.nodePod}.pods.localhost`).catch((e) => ({
        status: 0,
        body: String(e),
      }));
    const siteShows = (text: string, timeoutMs = 60_000) =>
      waitFor(
        `${j.nodePod} to serve "${text}"`,
        async () => ((await site()).body.includes(text) ? true : undefined),
        timeoutMs,
      );
    let firstDeployment: string | undefined;

    beforeAll(async () => {
      await j.git.createRepo(REPO, nodeApp("site v1"), { message: "v1" });
    });

    it("connects the local git server with the branch picker, deploys, and streams the build log into the page", async () => {
      const { page } = j;
      const res = await page.goto(app(j, `/pods/${j.nodePod}/deploys`));
      expect(res?.status()).toBe(200);
      await page.getByLabel("Repository URL (https)").fill(j.git.url(REPO));
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
      const revealed = (await j.owner.api.get(`/api/pods/${j.nodePod}/git/webhook-secret`)).body
        .webhook_secret;
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
      expect(await buildFinished(page)).toContain("success");
      expect(await log.textContent()).toMatch(/npm|install|build|start/i);
      await siteShows("site v1");
      const history = (await j.owner.api.get(`/api/pods/${j.nodePod}/git/deployments`)).body.deployments;
      firstDeployment = history[0].id;
      // the history, refreshed when the log ended, shows it succeeded and serving
      await page.locator("#deploy-rows .status-success").first().waitFor({ timeout: 10_000 });
    }, 400_000);

    it("deploys a second commit, then rolls back to the first from the history", async () => {
      const { page } = j;
      await j.git.commit(REPO, nodeApp("site v2"), { message: "v2" });
      // the previous test saw the log stream from a build that talks for 15 s; these two builds
      // need not take as long (the rollback builds with the settings of now)
      const quick = await j.owner.api.put(`/api/pods/${j.nodePod}/git`, {
        build_command: "echo quick build",
      });
      expect(quick.status, JSON.stringify(quick.body)).toBe(200);
      await page.goto(app(j, `/pods/${j.nodePod}/deploys`));
      await page.getByRole("button", { name: "Deploy now" }).click();
      await page.locator("pre[data-log-url]").waitFor({ timeout: 30_000 });
      expect(await buildFinished(page)).toContain("success");
      await siteShows("site v2");

      await page.goto(app(j, `/pods/${j.nodePod}/deploys`));
      const row = page.locator("#deploy-rows tr", {
        has: page.locator(`input[value="${need(firstDeployment, "the first deployment")}"]`),
      });
      await row.getByRole("button", { name: "Roll back to this" }).click();
      expect(j.dialogs.at(-1)).toContain(`back to deployment ${firstDeployment}`);
      await page.locator("pre[data-log-url]").waitFor({ timeout: 30_000 });
      expect(await buildFinished(page)).toContain("success");
      await siteShows("site v1");
      const newest = (await j.owner.api.get(`/api/pods/${j.nodePod}/git/deployments?limit=1`)).body
        .deployments[0];
      expect(newest).toMatchObject({ trigger: "rollback", rollback_of: firstDeployment, status: "success" });
    }, 400_000);
  });
}

/** the build log section's status line once the streamed deployment ended */
async function buildFinished(page: Page) {
  const status = page.locator("#build-log-status", { hasText: "Finished:" });
  await status.waitFor({ timeout: 240_000 });
  return (await status.textContent()) ?? "";
}

/** The Node.js pod's Databases tab: PostgreSQL installed, its credentials revealed only when asked. */
export function databasesSteps(j: Journey) {
  describe("databases", () => {
    it("installs PostgreSQL, shows it running without a reload, and reveals its credentials only when asked", async () => {
      const { page } = j;
      await page.goto(app(j, `/pods/${j.nodePod}/databases`));
      await page.getByLabel("Database to install").selectOption("postgresql");
      await page.getByRole("button", { name: "Install database" }).click();
      // the table is polled: installing turns running on the page
      await page.locator("#service-rows .status-running").waitFor({ timeout: 240_000 });
      const password = page.locator("#password-postgresql");
      expect(await password.textContent()).toContain("hidden until revealed");
      await page.getByRole("button", { name: "Reveal credentials" }).click();
      const creds = (await j.owner.api.get(`/api/pods/${j.nodePod}/services/postgresql/credentials`)).body;
      await expect.poll(() => password.textContent(), { timeout: 10_000 }).toBe(creds.password);
      expect(await page.locator("#connection-postgresql").textContent()).toBe(
        `postgresql://pod_user:${encodeURIComponent(creds.password)}@127.0.0.1:5432/pod_user`,
      );
      await page.getByRole("button", { name: "Copy connection string" }).waitFor();
    }, 300_000);
  });
}

/** The Node.js pod's Backups tab: back up, import the downloaded archive, restore. */
export function backupsSteps(j: Journey) {
  describe("backups", () => {
    it("backs up with a note, imports the downloaded archive with a progress bar, and restores: the confirmation names what is replaced, and the backup's files come back", async () => {
      const { page } = j;
      const marker = "/home/pod_user/app/marker.txt";
      const write = async (content: string) => {
        const res = await j.owner.api.put(`/api/pods/${j.nodePod}/files/content`, { path: marker, content });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      };
      const read = async () => {
        const res = await j.owner.api.get(`/api/pods/${j.nodePod}/files/content?path=${marker}`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body.content as string;
      };
      await write("as backed up\n");

      await page.goto(app(j, `/pods/${j.nodePod}/backups`));
      const note = `before the change ${Date.now()}`;
      await page.getByRole("textbox", { name: "Note (optional)" }).first().fill(note);
      await page.getByRole("button", { name: "Back up now" }).click();
      // the page reloads; the table is polled while the backup is in progress
      const row = page.locator("#backup-rows tr", { hasText: note });
      await row.locator(".status-completed").waitFor({ timeout: 300_000 });
      expect(await row.textContent()).toContain("verified");
      const backup = (await j.owner.api.get(`/api/pods/${j.nodePod}/backups`)).body.backups.find(
        (b: { note: string | null }) => b.note === note,
      );
      expect(await row.getByRole("link", { name: "Download" }).getAttribute("href")).toBe(
        `/api/pods/${j.nodePod}/backups/${backup.id}/download`,
      );

      // import the downloaded archive through the form: XMLHttpRequest's upload progress fills the bar
      const archive = await fetch(`${j.stack.api}/api/pods/${j.nodePod}/backups/${backup.id}/download`, {
        headers: { authorization: `Bearer ${j.owner.token}` },
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
      expect(j.dialogs.at(-1)).toMatch(
        /REPLACES the pod's app files \(\/home\/pod_user\/app\) and the contents of its databases/,
      );
      await row.locator("[data-status]", { hasText: "Restoring" }).waitFor({ timeout: 30_000 });
      await waitFor(
        "the restore to end",
        async () => {
          const events = (await j.owner.api.get(`/api/pods/${j.nodePod}/events?limit=50`)).body.events as {
            type: string;
          }[];
          if (events.some((e) => e.type === "restore_failed"))
            throw new Error(JSON.stringify(events.slice(0, 5)));
          return events.some((e) => e.type === "restore_completed") ? true : undefined;
        },
        300_000,
      );
      expect(await read()).toBe("as backed up\n");
    }, 700_000);

    it("has no serious or critical accessibility finding on the Deploys, Databases and Backups tabs with their rows (axe-core)", async () => {
      // 390 px wide: nothing but tables, tabs and logs (which scroll in their own box) reaches past the window
      const wide: string[] = [];
      const findings = await auditPages(
        j.browser,
        j.stack.api,
        j.owner.token,
        ["/deploys", "/databases", "/backups"].map((tab) => `/app/pods/${j.nodePod}${tab}`),
        {
          widths: [390],
          ready: async (tab, path) => {
            const past = (await tab.evaluate(`[...document.querySelectorAll("body *")]
              .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest(".table-wrap, nav.tabs, pre"))
              .map((el) => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().right))`)) as string[];
            for (const el of past) wide.push(`${path}: ${el}`);
          },
        },
      );
      expect(wide).toEqual([]);
      expect(findings).toEqual([]);
    }, 120_000);
  });
}
