import { mkdtemp, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalWorker, startLocalWorker } from "../../bench/support/worker";
import { launchChromium } from "./support/browser";

/** The API reference as a person sees it, in Debian's Chromium (installed by scripts/host/ensure-browser.sh). */
describe("GET /docs in a real browser", () => {
  let worker: LocalWorker;
  let browser: Browser;

  beforeAll(async () => {
    [worker, browser] = await Promise.all([startLocalWorker(), launchChromium()]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
  });

  it("lists every operation, and one expands to show its request body and responses", async () => {
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on("requestfailed", (req) => failed.push(req.url()));
    await page.goto(`${worker.url}/docs`);
    expect(await page.title()).toBe("Pod hosting API reference");
    await expect(page.locator("h1").textContent()).resolves.toBe("Pod hosting API");

    const documented = (await (await fetch(`${worker.url}/openapi.json`)).json()) as {
      paths: Record<string, object>;
    };
    const operations = Object.values(documented.paths).reduce(
      (n: number, item) => n + Object.keys(item).length,
      0,
    );
    expect(await page.locator("details.op").count()).toBe(operations);

    const register = page.locator("details.op", { hasText: "/api/auth/register" });
    await expect(register.locator("h4", { hasText: "Request body" }).isVisible()).resolves.toBe(false);
    await register.locator("summary").click();
    await expect(register.locator("h4", { hasText: "Request body" }).isVisible()).resolves.toBe(true);
    await expect(register.locator("pre").textContent()).resolves.toContain('"password"');
    await expect(register.locator("li", { hasText: "409" }).count()).resolves.toBe(1);

    const shot = path.join(await mkdtemp(path.join(tmpdir(), "podhost-docs-")), "docs.png");
    await page.screenshot({ path: shot, fullPage: false });
    expect((await stat(shot)).size).toBeGreaterThan(10_000);
    expect(failed).toEqual([]); // self-contained: nothing fetched from anywhere else
  });
});
