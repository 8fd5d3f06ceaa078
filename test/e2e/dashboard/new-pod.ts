import { randomBytes } from "node:crypto";
import { strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { auditPages, watchAttribute } from "../support/dashboard";
import { waitForPodStatus } from "../support/pods";
import { app, type Journey } from "./journey";

/**
 * The pod's site as a visitor's browser gets it (Chromium resolves *.localhost to loopback). A query
 * of its own each time: the browser may keep an earlier answer for the same URL (the journey visits
 * a page again after changing it), and the pod's server ignores the query.
 */
export async function served(j: Journey, name: string, path = "/"): Promise<string> {
  const visitor = await j.context.newPage();
  try {
    const res = await visitor.goto(
      `http://${name}.pods.localhost:${j.stack.edgePort}${path}?visit=${Date.now()}`,
    );
    return res && res.status() < 500 ? await res.text() : "";
  } finally {
    await visitor.close();
  }
}

/**
 * The new pod page and the pods list: a pod made from the page shows up in the list and turns
 * `running` there without a reload (the journey's static pod, used by later steps); a ZIP goes up
 * with its progress bar reaching 100 %; a repository's branches fill the picker; an import shows its
 * dry run's files before anything is made; the API's refusal shows in the form.
 */
export function newPodSteps(j: Journey) {
  describe("new pod", () => {
    let mark = 0;

    it("creates a static pod from the page, and the list shows it become running without a reload; its URL serves it", async () => {
      const { page } = j;
      mark = j.complaints.length;
      const name = `dnew-empty-${j.suffix}`;
      expect((await page.goto(app(j, "/new")))?.status()).toBe(200);
      await page.getByLabel("Name").fill(name);
      await page.locator("select[name=preset]").selectOption("static");
      await page.getByRole("button", { name: "Create pod" }).click();
      await page.locator("[data-status]", { hasText: `Accepted: ${name} is being created.` }).waitFor();
      // the page follows the pod's progress: its events appear as they are recorded
      await page.locator("#new-pod-progress h2", { hasText: name }).waitFor({ timeout: 15_000 });
      await page.locator("#new-pod-progress li.event-created").waitFor({ timeout: 15_000 });

      // the list, straight away: the pod is there, and turns running by the rows' own refresh
      let navigations = 0;
      await page.goto(app(j, ""));
      const count = (frame: unknown) => {
        if (frame === page.mainFrame()) navigations++;
      };
      page.on("framenavigated", count);
      try {
        const badge = page.locator(`tr[data-pod="${name}"] .badge`).first();
        await badge.waitFor();
        const firstSeen = await badge.textContent();
        await page.locator(`tr[data-pod="${name}"] .badge.status-running`).waitFor({ timeout: 90_000 });
        expect(navigations).toBe(0);
        console.log(`list first showed ${name} as ${firstSeen}, then running without a reload`);
      } finally {
        page.off("framenavigated", count);
      }
      await expect(page.locator(`tr[data-pod="${name}"]`).textContent()).resolves.toContain("$5/mo");
      j.made.staticPod = name;

      // open its URL: the row's link is the pod's address, which serves its page
      const href = await page.locator(`tr[data-pod="${name}"] a[href^="http"]`).first().getAttribute("href");
      expect(href).toContain(`${name}.pods.localhost`);
      await expect.poll(() => served(j, name), { timeout: 30_000 }).toContain("<");
    }, 180_000);

    it("uploads a ZIP with the progress bar reaching 100 %, then follows the pod until it runs", async () => {
      const { page } = j;
      const name = `dnew-zip-${j.suffix}`;
      const marker = `from the zip ${j.suffix}`;
      // 4 MiB of noise beside index.html: stored, not deflated, so the upload takes its time
      const archive = zipSync(
        {
          "index.html": strToU8(`<!doctype html><h1>${marker}</h1>`),
          "noise.bin": [new Uint8Array(randomBytes(4 * 1024 * 1024)), { level: 0 }],
        },
        { level: 6 },
      );
      await page.goto(app(j, "/new?source=zip"));
      // every value the progress bar takes, recorded in the page as it changes
      await watchAttribute(page, "[data-upload-bar]", "value");
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
      await waitForPodStatus(j.owner.api, name, "running");
      await expect.poll(() => served(j, name), { timeout: 30_000 }).toContain(marker);
    }, 180_000);

    it("picks a branch a repository's branches fill, makes the pod from it, and the list shows its deploy", async () => {
      const { page, git, owner } = j;
      const name = `dnew-repo-${j.suffix}`;
      const repo = `site-${j.suffix}`;
      await git.createRepo(repo, { "index.html": "<!doctype html><h1>from main</h1>" });
      await git.commit(
        repo,
        { "index.html": `<!doctype html><h1>from preview ${j.suffix}</h1>` },
        { branch: "preview" },
      );
      await page.goto(app(j, "/new?source=repo"));
      const create = page.getByRole("button", { name: "Create pod" });
      await expect(create.isDisabled()).resolves.toBe(true);
      await page.getByLabel("Repository URL").fill(git.url(repo));
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
      const connected = await owner.api.get(`/api/pods/${name}/git`);
      expect(connected.body).toMatchObject({ repo_url: git.url(repo), branch: "preview" });

      // the list: the pod's first deploy shows up in its row and ends in success, without a reload
      await page.goto(app(j, ""));
      await page
        .locator(`tr[data-pod="${name}"] .badge.status-success`)
        .first()
        .waitFor({ timeout: 150_000 })
        .catch(async (err) => {
          console.log(JSON.stringify((await owner.api.get(`/api/pods/${name}/git/deployments`)).body));
          throw err;
        });
      await expect.poll(() => served(j, name), { timeout: 30_000 }).toContain(`from preview ${j.suffix}`);
    }, 240_000);

    it("shows an import's dry-run files before anything is made, then imports", async () => {
      const { page, owner } = j;
      const name = `dnew-imp-${j.suffix}`;
      await page.goto(app(j, "/new?source=import"));
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
      const before = await owner.api.get("/api/pods?limit=100");
      expect(before.body.pods.map((p: { name: string }) => p.name)).not.toContain(name);

      await page.getByLabel("Name").fill(name);
      await expect(create.isEnabled()).resolves.toBe(true);
      await create.click();
      await page.locator("#new-pod-progress h2", { hasText: name }).waitFor({ timeout: 15_000 });
      const after = await owner.api.get(`/api/pods/${name}`);
      expect(after.status).toBe(200);
    }, 120_000);

    it("shows the API's error when it refuses", async () => {
      const { page } = j;
      await page.goto(app(j, "/new"));
      // a name the previous test took: the API answers 409, the page says why
      await page.getByLabel("Name").fill(`dnew-imp-${j.suffix}`);
      await page.getByRole("button", { name: "Create pod" }).click();
      await page.locator("[data-error]", { hasText: "(HTTP 409)" }).waitFor({ timeout: 15_000 });
    }, 60_000);

    it("at 390 and 1440 px: axe-core finds nothing serious, nothing scrolls sideways; the CSP refused nothing all along", async () => {
      expect(j.complaints.slice(mark)).toEqual([]);
      const pages = ["", "/new", "/new?source=zip", "/new?source=repo", "/new?source=import"];
      expect(
        await auditPages(
          j.browser,
          j.stack.api,
          j.owner.token,
          pages.map((p) => `/app${p}`),
        ),
      ).toEqual([]);
    }, 120_000);
  });
}
