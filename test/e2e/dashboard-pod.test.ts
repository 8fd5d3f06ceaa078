import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { createRunningPods, waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * A pod's Overview, Files and Environment tabs in Debian's Chromium against the real stack (Worker,
 * agent, Docker, ingress): what the browser does is the public API's doing, and the pod shows it.
 * One stack and one static pod for the file's tests; the last one deletes the pod.
 */

const POD = "dash-pod";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe("a pod's tabs in a real browser", () => {
  let stack: Stack;
  let api: ApiClient;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let sessionToken: string;

  const app = (path: string) => `${stack.api}/app${path}`;
  /** the pod's site through the test's ingress (the pod domain is pods.localhost, loopback) */
  const site = (path = "/") => `http://${POD}.pods.localhost:${stack.ingressPort}${path}`;

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startStack("dpod", { publicUrl: true }), launchChromium()]);
    const owner = await signUp(stack.api, "Dashboard Owner");
    api = owner.api;
    sessionToken = owner.token;
    await waitForHostOnline(api);
    await createRunningPods(api, [[POD, "static"]]);
    context = await browser.newContext();
    // PUBLIC_URL is the Worker's own address here: the dashboard answers on that host only
    await context.addCookies([{ name: "pod_session", value: owner.token, url: stack.api }]);
    page = await context.newPage();
    // a loaded machine (other suites' stacks beside this one) has taken over 5 minutes to get here
  }, 600_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
  }, 120_000);

  it("edits index.html in the file editor, and the pod serves the change", async () => {
    const res = await page.goto(app(`/pods/${POD}/files`));
    expect(res?.status()).toBe(200);
    const listed = page.getByRole("link", { name: "index.html", exact: true });
    await listed.or(page.getByText("The folder cannot be listed")).first().waitFor();
    expect(await page.locator("main > p.form-error").allTextContents()).toEqual([]);
    await listed.click();
    const editor = page.locator("textarea[name=content]");
    await editor.waitFor();
    expect(await editor.inputValue()).toContain("<");
    const marker = `edited in the dashboard ${Date.now()}`;
    await editor.fill(`<!doctype html>\n<h1>${marker}</h1>\n`);
    await page.getByRole("button", { name: "Save index.html" }).click();
    await page.locator(".editor [data-status]", { hasText: "Saved." }).waitFor({ timeout: 20_000 });

    const visitor = await context.newPage();
    await expect
      .poll(
        async () => {
          const served = await visitor.goto(site("/"));
          return (await served?.text()) ?? "";
        },
        { timeout: 15_000 },
      )
      .toContain(marker);
    await visitor.close();
  }, 120_000);

  it("uploads a file with a progress bar reaching 100 %, then lists it", async () => {
    await page.goto(app(`/pods/${POD}/files`));
    // every value the progress bar takes, recorded in the page as it changes
    // (a string: this file is type-checked without the DOM's types)
    await page.evaluate(`(() => {
      const bar = document.querySelector("[data-upload-bar]");
      window.seen = [];
      new MutationObserver(() => window.seen.push(bar.getAttribute("value"))).observe(bar, {
        attributes: true,
        attributeFilter: ["value"],
      });
    })()`);
    const size = 3 * 1024 * 1024;
    const bytes = Buffer.alloc(size, 7);
    await page.locator("[data-upload-input]").setInputFiles({
      name: "big-upload.bin",
      mimeType: "application/octet-stream",
      buffer: bytes,
    });
    await page
      .locator("[data-upload-status]", { hasText: "big-upload.bin: 100 %, uploaded" })
      .waitFor({ timeout: 60_000 });
    const seen = (await page.evaluate("window.seen")) as string[];
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.at(-1)).toBe("100");
    // the page reloads and lists it; the API has every byte
    await page.getByRole("link", { name: "big-upload.bin", exact: true }).waitFor({ timeout: 15_000 });
    const listed = await api.get(`/api/pods/${POD}/files?path=/home/pod_user/app`);
    const entry = listed.body.files.find((f: { name: string }) => f.name === "big-upload.bin");
    expect(entry?.size).toBe(String(size));
  }, 120_000);

  it("makes a folder and a file, renames, copies and deletes (after confirming) through the page's forms", async () => {
    await page.goto(app(`/pods/${POD}/files`));
    await page.getByLabel("New folder (full path)").fill("/home/pod_user/app/made-here");
    await page.getByRole("button", { name: "Create folder" }).click();
    await page.getByRole("link", { name: "made-here/" }).waitFor({ timeout: 20_000 });

    await page.getByLabel("New empty file (full path)").fill("/home/pod_user/app/notes.txt");
    await page.getByRole("button", { name: "Create file" }).click();
    await page.getByRole("link", { name: "notes.txt", exact: true }).click({ timeout: 20_000 });
    await page.locator("textarea[name=content]").waitFor({ timeout: 20_000 });
    await page.getByLabel("Rename or move to (full path)").fill("/home/pod_user/app/made-here/moved.txt");
    await page.getByRole("button", { name: "Rename file" }).click();
    await page.waitForURL(/files\?path=%2Fhome%2Fpod_user%2Fapp$/, { timeout: 20_000 });

    await page.getByRole("link", { name: "made-here/" }).click();
    await page.getByRole("link", { name: "moved.txt", exact: true }).click();
    await page.getByLabel("Copy to (full path)").fill("/home/pod_user/app/made-here/copied.txt");
    await page.getByRole("button", { name: "Copy file" }).click();
    await page.getByRole("link", { name: "copied.txt", exact: true }).waitFor({ timeout: 20_000 });

    await page.getByRole("link", { name: "copied.txt", exact: true }).click();
    const asked: string[] = [];
    page.once("dialog", (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.getByRole("button", { name: "Delete file" }).click();
    await page.waitForURL(/files\?path=%2Fhome%2Fpod_user%2Fapp%2Fmade-here$/, { timeout: 20_000 });
    expect(asked).toEqual(["Delete /home/pod_user/app/made-here/copied.txt? This cannot be undone."]);
    const left = await api.get(`/api/pods/${POD}/files?path=/home/pod_user/app/made-here`);
    expect(left.body.files.map((f: { name: string }) => f.name)).toEqual(["moved.txt"]);
  }, 120_000);

  it("sets an env var in the table, reviews the diff, saves and restarts; values stay out of the page until revealed", async () => {
    await page.goto(app(`/pods/${POD}/env`));
    await page.getByRole("button", { name: "Add variable" }).click();
    const row = page.locator("[data-env-rows] tr").last();
    await row.locator("[data-env-key]").fill("GREETING");
    const value = `hello from the table ${Date.now()}`;
    await row.locator("[data-env-value]").fill(value);
    await page.getByRole("button", { name: "Review changes" }).click();
    await expect(page.locator("[data-env-diff]").textContent()).resolves.toBe("+ GREETING (new)");
    await page.getByRole("button", { name: "Save and restart the pod" }).click();
    await page.locator("[data-env-status]", { hasText: "Saved and restarted." }).waitFor({ timeout: 60_000 });

    const env = await api.get(`/api/pods/${POD}/env`);
    expect(env.status).toBe(200);
    expect(env.body.vars.GREETING).toBe(value);
    await waitForPodStatus(api, POD, "running");

    // after the reload: the name is there, its value is not, until Reveal fetches it from the API
    await page.locator('[data-env-row][data-original="GREETING"]').waitFor({ timeout: 15_000 });
    expect(await page.content()).not.toContain(value);
    await page.getByRole("button", { name: "Reveal values" }).click();
    await expect
      .poll(() => page.locator('[data-original="GREETING"] [data-env-value]').inputValue())
      .toBe(value);
  }, 180_000);

  it("axe-core finds nothing serious on the three tabs, and 390 px needs no sideways scrolling", async () => {
    const tabs = [`/pods/${POD}`, `/pods/${POD}/files?entry=index.html`, `/pods/${POD}/env`];
    const findings: string[] = [];
    for (const width of [390, 1440]) {
      // axe is injected as a script of the test's own: that context bypasses the page's CSP for it
      const axeContext = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      await axeContext.addCookies([{ name: "pod_session", value: sessionToken, url: stack.api }]);
      for (const url of tabs) {
        const tab = await axeContext.newPage();
        expect((await tab.goto(app(url)))?.status(), url).toBe(200);
        if (await tab.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")) {
          findings.push(`${url} scrolls sideways at ${width} px`);
        }
        await tab.addScriptTag({ content: axeSource });
        const violations = (await tab.evaluate(
          "axe.run(document).then((r) => r.violations)",
        )) as AxeViolation[];
        for (const v of violations) {
          if (v.impact === "serious" || v.impact === "critical") {
            findings.push(
              `${url} at ${width} px: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
            );
          }
        }
        await tab.close();
      }
      await axeContext.close();
    }
    expect(findings).toEqual([]);
  }, 180_000);

  it("deletes the pod once its name is typed", async () => {
    await page.goto(app(`/pods/${POD}`));
    const confirm = page.getByLabel(`Type ${POD} to confirm`);
    const button = page.getByRole("button", { name: `Delete ${POD}` });
    await confirm.fill(`${POD}-nope`);
    expect(await button.isDisabled()).toBe(true);
    await confirm.fill(POD);
    expect(await button.isDisabled()).toBe(false);
    await button.click();
    await page.waitForURL(app(""), { timeout: 60_000 });
    const gone = await api.get(`/api/pods/${POD}`);
    expect(gone.status).toBe(404);
  }, 120_000);
});
