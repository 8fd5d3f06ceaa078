import { mkdir } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { axeFindings, recordComplaints, scrollsSideways, signedInContext } from "../support/dashboard";
import { waitForPodStatus } from "../support/pods";
import type { Journey } from "./journey";

/**
 * Every page of the dashboard (#26 items 7 and 8), as the showcase account (a team of its own with
 * one static pod, so the screenshots show a tidy account): each answers 200 with no console error
 * and no CSP refusal, axe-core finds nothing serious or critical (at 1440 px, and on the main pages
 * at 390 px too), and the main pages need no sideways scrolling at 390 px. `PODHOST_SCREENSHOTS=docs/dashboard npx vitest run --project node
 * test/e2e/dashboard.test.ts -t "every page"` also saves each main page at 390 and 1440 px there.
 */

const SCREENSHOTS = process.env.PODHOST_SCREENSHOTS;

/** The pages, signed out and in; the pod's tabs by their path segment. */
const SIGNED_OUT = ["/app/sign-in", "/app/register", "/app/forgot-password"];
const SIGNED_IN = ["/app", "/app/new", "/app/team", "/app/account", "/app/billing", "/app/affiliates"];
const POD_TABS = [
  "",
  "/logs",
  "/metrics",
  "/files",
  "/terminal",
  "/env",
  "/deploys",
  "/databases",
  "/backups",
  "/domains",
  "/feedback",
  "/agents",
  "/events",
];
/** the main pages: at 390 px too, and in the screenshots */
const MAIN = [
  "/app/sign-in",
  "/app",
  "/app/new",
  "/pod",
  "/pod/logs",
  "/pod/metrics",
  "/pod/files",
  "/pod/terminal",
  "/pod/deploys",
  "/pod/backups",
  "/app/team",
  "/app/account",
  "/app/billing",
];

export function everyPageSteps(j: Journey) {
  describe("every page", () => {
    const pod = () => j.showcase.pod;
    const pages = () => [
      ...SIGNED_OUT.map((p) => ({ path: p, signedIn: false })),
      ...SIGNED_IN.map((p) => ({ path: p, signedIn: true })),
      ...POD_TABS.map((t) => ({ path: `/app/pods/${pod()}${t}`, signedIn: true })),
    ];

    beforeAll(async () => {
      await waitForPodStatus(j.showcase.api, pod(), "running", 120_000);
    }, 150_000);

    /**
     * One visit per page and width, under the page's own CSP (axe is evaluated through the
     * DevTools protocol, which the CSP does not govern): HTTP 200, nothing logged and axe's serious
     * or critical findings at each width it is visited at (every page at 1440 px, the main pages at
     * 390 px too); the main pages' sideways scrolling and the screenshot when asked.
     */
    it("answers every page with 200, no console error or CSP refusal, no serious axe finding; the main pages fit 390 px", async () => {
      if (SCREENSHOTS) await mkdir(SCREENSHOTS, { recursive: true });
      const main = new Set(MAIN.map((p) => p.replace(/^\/pod/, `/app/pods/${pod()}`)));
      const problems: string[] = [];
      const findings: string[] = [];
      const overflow: string[] = [];
      for (const width of [1440, 390]) {
        const out = await signedInContext(j.browser, j.stack.api, undefined, { width });
        const inside = await signedInContext(j.browser, j.stack.api, j.showcase.token, { width });
        try {
          // one tab per context, navigated from page to page: the renderer keeps axe compiled
          const tabs = { out: await out.newPage(), inside: await inside.newPage() };
          const heard = { out: recordComplaints(tabs.out, []), inside: recordComplaints(tabs.inside, []) };
          for (const { path: p, signedIn } of pages()) {
            // every page at 1440 px; the main ones at 390 px too
            if (width === 390 && !main.has(p)) continue;
            const page = signedIn ? tabs.inside : tabs.out;
            const complaints = signedIn ? heard.inside : heard.out;
            const status = (await page.goto(`${j.stack.api}${p}`, { waitUntil: "load" }))?.status() ?? 0;
            if (status !== 200) problems.push(`${p} at ${width} px: HTTP ${status}`);
            // axe at both widths: at 390 px tables scroll in their boxes, which must be reachable by
            // keyboard (scrollable-region-focusable), and what a narrow layout hides or moves counts
            findings.push(...(await axeFindings(page, `${p} at ${width} px`)));
            if (main.has(p)) {
              if (await scrollsSideways(page)) overflow.push(`${p} at ${width} px`);
              if (SCREENSHOTS) {
                const name = `${
                  p
                    .replace(/^\/app\/?/, "")
                    .replaceAll("/", "-")
                    .replace(pod(), "pod") || "pods"
                }-${width}.png`;
                await page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
              }
            }
            // read after axe's run, which gives late scripts (live regions, polls) their time
            // (what the tab says after this, as it leaves the page, is counted for the next one)
            for (const c of complaints.splice(0)) problems.push(`${p} at ${width} px: ${c}`);
          }
        } finally {
          await out.close();
          await inside.close();
        }
      }
      expect(problems).toEqual([]);
      expect(findings).toEqual([]);
      expect(overflow).toEqual([]);
    }, 300_000);
  });
}
