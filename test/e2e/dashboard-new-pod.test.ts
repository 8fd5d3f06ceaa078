import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { strToU8, zipSync } from "fflate";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitServer } from "../support/git-server";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * The new pod page and the pods list in Debian's Chromium against the real stack (Worker, agent,
 * Docker, ingress): a pod made from the page shows up in the list and turns `running` there without
 * a reload; a ZIP goes up with its progress bar reaching 100 %; an import shows its dry run's files
 * before anything is made. One stack for the file's tests.
 */

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe("the new pod page in a real browser", () => {
  let stack: Stack;
  let api: ApiClient;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  const app = (path: string) => `${stack.api}/app${path}`;
  const site = (name: string) => `http://${name}.pods.localhost:${stack.ingressPort}/`;
  const suffix = Date.now().toString(36).slice(-5);

  /** The pod's site as a visitor's browser gets it (Chromium resolves *.localhost to loopback). */
  async function served(name: string): Promise<string> {
    const visitor = await context.newPage();
    try {
      const res = await visitor.goto(site(name));
      return res && res.status() < 500 ? await res.text() : "";
    } finally {
      await visitor.close();
    }
  }

  let sessionToken = "";
  const pageErrors: string[] = [];

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startStack("dnew", { publicUrl: true }), launchChromium()]);
    const owner = await signUp(stack.api, "New Pod Owner");
    api = owner.api;
    sessionToken = owner.token;
    await waitForHostOnline(api);
    context = await browser.newContext();
    // PUBLIC_URL is the Worker's own address here: the dashboard answers on that host only
    await context.addCookies([{ name: "pod_session", value: owner.token, url: stack.api }]);
    page = await context.newPage();
    // what the page's own CSP refuses, and script errors, over every test of the file
    page.on("console", (msg) => {
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource"))
        pageErrors.push(msg.text());
    });
    page.on("pageerror", (err) => pageErrors.push(err.message));
  }, 300_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
  }, 120_000);

  it("creates a static pod from the page, and the list shows it become running without a reload", async () => {
    const name = `dnew-empty-${suffix}`;
    expect((await page.goto(app("/new")))?.status()).toBe(200);
    await page.getByLabel("Name").fill(name);
    await page.locator("select[name=preset]").selectOption("static");
    await page.getByRole("button", { name: "Create pod" }).click();
    await page.locator("[data-status]", { hasText: `Accepted: ${name} is being created.` }).waitFor();
    // the page follows the pod's progress: its events appear as they are recorded
    await page.locator("#new-pod-progress h2", { hasText: name }).waitFor({ timeout: 15_000 });
    await page.locator("#new-pod-progress li.event-created").waitFor({ timeout: 15_000 });

    // the list, straight away: the pod is there, and turns running by the rows' own refresh
    let navigations = 0;
    await page.goto(app(""));
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame()) navigations++;
    });
    const badge = page.locator(`tr[data-pod="${name}"] .badge`).first();
    await badge.waitFor();
    const firstSeen = await badge.textContent();
    await page.locator(`tr[data-pod="${name}"] .badge.status-running`).waitFor({ timeout: 90_000 });
    expect(navigations).toBe(0);
    console.log(`list first showed ${name} as ${firstSeen}, then running without a reload`);
    await expect(page.locator(`tr[data-pod="${name}"]`).textContent()).resolves.toContain("$5/mo");

    await expect.poll(() => served(name), { timeout: 30_000 }).toContain("<");
  }, 180_000);

  it("uploads a ZIP with the progress bar reaching 100 %, then follows the pod until it runs", async () => {
    const name = `dnew-zip-${suffix}`;
    const marker = `from the zip ${suffix}`;
    // 4 MiB of noise beside index.html: stored, not deflated, so the upload takes its time
    const archive = zipSync(
      {
        "index.html": strToU8(`<!doctype html><h1>${marker}</h1>`),
        "noise.bin": [new Uint8Array(randomBytes(4 * 1024 * 1024)), { level: 0 }],
      },
      { level: 6 },
    );
    await page.goto(app("/new?source=zip"));
    // every value the progress bar takes, recorded in the page as it changes (a string: the
    // test's tsconfig has no DOM types)
    await page.evaluate(`{
      const bar = document.querySelector("[data-upload-bar]");
      window.seen = [];
      new MutationObserver(() => window.seen.push(bar.getAttribute("value"))).observe(bar, {
        attributes: true,
        attributeFilter: ["value"],
      });
    }`);
    await expect(page.getByRole("button", { name: "Create pod" }).isDisabled()).resolves.toBe(true);
    await page.getByLabel("ZIP file").setInputFiles({
      name: "site.zip",
      mimeType: "application/zip",
      buffer: Buffer.from(archive),
    });
    await page.getByLabel("Name").fill(name);
    await page.getByRole("button", { name: "Create pod" }).click();
    await page.locator("[data-upload-status]", { hasText: "100 % uploaded" }).waitFor({ timeout: 60_000 });
    const seen = (await page.evaluate("window.seen")) as string[];
    expect(seen.at(-1)).toBe("100");
    expect(seen.length).toBeGreaterThan(1);

    await page.locator("#new-pod-progress[data-pod-status=running]").waitFor({ timeout: 90_000 });
    await page.getByRole("link", { name: "Open its page" }).waitFor();
    await waitForPodStatus(api, name, "running");
    await expect.poll(() => served(name), { timeout: 30_000 }).toContain(marker);
  }, 180_000);

  it("picks a branch a repository's branches fill, makes the pod from it, and the list shows its deploy", async () => {
    const name = `dnew-repo-${suffix}`;
    const server = await startGitServer();
    try {
      await server.createRepo("site", { "index.html": "<!doctype html><h1>from main</h1>" });
      await server.commit(
        "site",
        { "index.html": `<!doctype html><h1>from preview ${suffix}</h1>` },
        {
          branch: "preview",
        },
      );
      await page.goto(app("/new?source=repo"));
      const create = page.getByRole("button", { name: "Create pod" });
      await expect(create.isDisabled()).resolves.toBe(true);
      await page.getByLabel("Repository URL").fill(server.url("site"));
      await page.getByRole("button", { name: "Load branches" }).click();
      const branch = page.locator("select[name=branch]");
      await expect
        .poll(() => branch.locator("option").allTextContents(), { timeout: 30_000 })
        .toEqual(expect.arrayContaining(["main (default)", "preview"]));
      await expect(branch.inputValue()).resolves.toBe("main");
      await branch.selectOption("preview");
      await page.getByLabel("Name").fill(name);
      await create.click();
      await page.locator("#new-pod-progress h2", { hasText: name }).waitFor({ timeout: 15_000 });
      const git = await api.get(`/api/pods/${name}/git`);
      expect(git.body).toMatchObject({ repo_url: server.url("site"), branch: "preview" });

      // the list: the pod's first deploy shows up in its row and ends in success, without a reload
      await page.goto(app(""));
      await page
        .locator(`tr[data-pod="${name}"] .badge.status-success`)
        .first()
        .waitFor({ timeout: 150_000 })
        .catch(async (err) => {
          console.log(JSON.stringify((await api.get(`/api/pods/${name}/git/deployments`)).body));
          throw err;
        });
      await expect.poll(() => served(name), { timeout: 30_000 }).toContain(`from preview ${suffix}`);
    } finally {
      await server.close();
    }
  }, 240_000);

  it("shows an import's dry-run files before anything is made, then imports", async () => {
    const name = `dnew-imp-${suffix}`;
    await page.goto(app("/new?source=import"));
    const create = page.getByRole("button", { name: "Create pod" });
    await expect(create.isDisabled()).resolves.toBe(true);
    await page
      .getByLabel("or paste the code")
      .fill("<!doctype html><title>Pasted page</title><h1>Hello from a paste</h1>");
    await page.getByRole("button", { name: "Preview the files" }).click();
    const files = page.locator("[data-import-files] tr");
    await files.first().waitFor({ timeout: 30_000 });
    await expect(files.allTextContents()).resolves.toEqual(
      expect.arrayContaining([expect.stringMatching(/^index\.html/)]),
    );
    await expect(page.locator("[data-import-title]").textContent()).resolves.toBe("Pasted page");
    // the preview made no pod
    const before = await api.get("/api/pods?limit=100");
    expect(before.body.pods.map((p: { name: string }) => p.name)).not.toContain(name);

    await page.getByLabel("Name").fill(name);
    await expect(create.isEnabled()).resolves.toBe(true);
    await create.click();
    await page.locator("#new-pod-progress h2", { hasText: name }).waitFor({ timeout: 15_000 });
    const after = await api.get(`/api/pods/${name}`);
    expect(after.status).toBe(200);
  }, 120_000);

  it("shows the API's error when it refuses", async () => {
    await page.goto(app("/new"));
    // a name the previous test took: the API answers 409, the page says why
    await page.getByLabel("Name").fill(`dnew-imp-${suffix}`);
    await page.getByRole("button", { name: "Create pod" }).click();
    await page.locator("[data-error]", { hasText: "(HTTP 409)" }).waitFor({ timeout: 15_000 });
  }, 60_000);
  it("at 390 and 1440 px: axe-core finds nothing serious, nothing scrolls sideways; the CSP refused nothing all along", async () => {
    expect(pageErrors).toEqual([]);
    const pages = ["", "/new", "/new?source=zip", "/new?source=repo", "/new?source=import"];
    const findings: string[] = [];
    for (const width of [390, 1440]) {
      // axe is injected as a script of the test's own: that context bypasses the page's CSP for it
      const viewer = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      await viewer.addCookies([{ name: "pod_session", value: sessionToken, url: stack.api }]);
      for (const path of pages) {
        const tab = await viewer.newPage();
        tab.on("console", (msg) => {
          if (msg.type() === "error") findings.push(`${path} at ${width} px logged: ${msg.text()}`);
        });
        expect((await tab.goto(app(path)))?.status(), path).toBe(200);
        if (await tab.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")) {
          findings.push(`${path} scrolls sideways at ${width} px`);
        }
        await tab.addScriptTag({ content: axeSource });
        const violations = (await tab.evaluate(
          "axe.run(document).then((r) => r.violations)",
        )) as AxeViolation[];
        for (const v of violations) {
          if (v.impact === "serious" || v.impact === "critical") {
            findings.push(
              `${path} at ${width} px: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
            );
          }
        }
        await tab.close();
      }
      await viewer.close();
    }
    expect(findings).toEqual([]);
  }, 120_000);
});
