import { beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../../support/http";
import { waitForPodStatus } from "../support/pods";
import { waitFor } from "../support/stack";
import { app, type Journey } from "./journey";

/** logs each request's path; `/flood?n=` prints n lines at once */
const SERVER_JS = `require("http").createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  if (u.pathname === "/flood") {
    const n = Number(u.searchParams.get("n"));
    let out = "";
    for (let i = 0; i < n; i++) out += "flood line " + i + " " + "x".repeat(40) + "\\n";
    process.stdout.write(out);
  } else console.log("request " + u.pathname);
  res.end("ok");
}).listen(process.env.PORT);
`;

/**
 * The Node.js pod's Logs and Metrics tabs: the live tail shows a line the app writes after the page
 * opened, 10,000 lines arriving in a second keep the page responsive (the longest main-thread block
 * measured in the page), and the charts draw the history.
 */
export function logsSteps(j: Journey) {
  describe("logs and metrics", () => {
    const appGet = (path: string) => httpGet(j.stack.edgePort, `${j.nodePod}.pods.localhost`, path);

    beforeAll(async () => {
      const { api } = j.owner;
      await waitForPodStatus(api, j.nodePod, "running", 120_000);
      const wrote = await api.post(`/api/pods/${j.nodePod}/exec`, {
        command: ["sh", "-c", 'printf %s "$1" > /home/pod_user/app/server.js', "sh", SERVER_JS],
      });
      expect(wrote.body.exit_code).toBe(0);
      expect((await api.post(`/api/pods/${j.nodePod}/reload`)).status).toBeLessThan(300);
      await waitFor(
        "the app",
        async () => ((await appGet("/ready").catch(() => undefined))?.status === 200 ? true : undefined),
        60_000,
      );
    }, 240_000);

    it("shows a line the app writes after the page opened", async () => {
      const { page } = j;
      const res = await page.goto(app(j, `/pods/${j.nodePod}/logs`));
      expect(res?.status()).toBe(200);
      await page.locator("[data-logs-status]", { hasText: "Live." }).waitFor({ timeout: 15_000 });
      const marker = `/after-open-${Date.now()}`;
      await appGet(marker);
      await page
        .locator("[data-logs-lines] div", { hasText: `request ${marker}` })
        .waitFor({ timeout: 5_000 });
    });

    it("stays responsive while 10,000 lines arrive in a second", async () => {
      const { page } = j;
      // a probe in the page: a task every 10 ms, recording how late each one ran (a click waits as long)
      await page.evaluate(`(() => {
        window.__lag = 0;
        let last = performance.now();
        window.__probe = setInterval(() => {
          const now = performance.now();
          window.__lag = Math.max(window.__lag, now - last - 10);
          last = now;
        }, 10);
      })()`);
      const t = Date.now();
      await appGet("/flood?n=10000");
      await page
        .locator("[data-logs-lines] div", { hasText: "flood line 9999 " })
        .waitFor({ timeout: 15_000 });
      const arrivedMs = Date.now() - t;
      // a click on Pause is handled at once
      const clickMs = await page.evaluate(`new Promise((resolve) => {
        const button = document.querySelector("[data-logs-pause]");
        const start = performance.now();
        button.addEventListener("click", () => resolve(performance.now() - start), { once: true });
        setTimeout(() => button.click(), 0);
      })`);
      const lag = (await page.evaluate(
        "(() => { clearInterval(window.__probe); return window.__lag; })()",
      )) as number;
      const shown = (await page.evaluate(
        `document.querySelectorAll("[data-logs-lines] div").length`,
      )) as number;
      console.log(
        `10,000 lines in ${arrivedMs} ms; longest main-thread block ${Math.round(lag)} ms; ${shown} line elements`,
      );
      // A page that drew every line would block for seconds; 400 ms leaves room for the timer
      // lateness a loaded 2-core machine adds by itself (seen up to ~350 ms with no page work).
      expect(lag).toBeLessThan(400);
      expect(clickMs as number).toBeLessThan(400);
      expect(shown).toBeLessThanOrEqual(2_000);
      expect(await page.getByRole("button", { name: "Resume" }).count()).toBe(1);
    });

    it("draws the metrics charts from the history", async () => {
      const { page } = j;
      await waitFor(
        "a metrics sample",
        async () => {
          const h = await j.owner.api.get(`/api/pods/${j.nodePod}/metrics/history?hours=1`);
          return Array.isArray(h.body) && h.body.length > 0 ? true : undefined;
        },
        150_000,
      );
      const res = await page.goto(app(j, `/pods/${j.nodePod}/metrics`));
      expect(res?.status()).toBe(200);
      await page.locator(".metrics-chart canvas").first().waitFor({ timeout: 10_000 });
      expect(await page.locator(".metrics-chart canvas").count()).toBe(4);
      const points = (await page.evaluate(
        `JSON.parse(document.getElementById("metrics-data").textContent).columns[0].length`,
      )) as number;
      expect(points).toBeGreaterThan(0);
    }, 200_000);
  });
}
