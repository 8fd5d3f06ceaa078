import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * Every page of the dashboard in Debian's Chromium against the real stack (#26 items 7 and 8):
 * no page breaks its own Content-Security-Policy or logs an error, axe-core finds nothing serious
 * or critical, and both widths render. `PODHOST_SCREENSHOTS=docs/dashboard npx vitest run --project
 * node test/e2e/dashboard-pages.test.ts` also saves each main page at 390 and 1440 px there.
 */

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const SCREENSHOTS = process.env.PODHOST_SCREENSHOTS;
const POD = "showcase";

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

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe("every dashboard page in a real browser", () => {
  let stack: Stack;
  let browser: Browser;
  let token: string;

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startStack("dpages", { publicUrl: true }), launchChromium()]);
    const user = await signUp(stack.api, "Ada Lovelace");
    token = user.token;
    await waitForHostOnline(user.api);
    await createRunningPods(user.api, [[POD, "static"]]);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  async function contextFor(width: number, opts: { signedIn: boolean; bypassCSP?: boolean }) {
    const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: opts.bypassCSP });
    if (opts.signedIn) await context.addCookies([{ name: "pod_session", value: token, url: stack.api }]);
    return context;
  }

  /** Opens a page and collects what the browser complains about (CSP refusals are console errors). */
  async function visit(context: BrowserContext, url: string) {
    const page = await context.newPage();
    const complaints: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") complaints.push(m.text());
    });
    page.on("pageerror", (e) => complaints.push(String(e)));
    const res = await page.goto(`${stack.api}${url}`, { waitUntil: "load" });
    await page.waitForTimeout(300);
    return { page, status: res?.status() ?? 0, complaints };
  }

  const allPages = () => [
    ...SIGNED_OUT.map((p) => ({ path: p, signedIn: false })),
    ...SIGNED_IN.map((p) => ({ path: p, signedIn: true })),
    ...POD_TABS.map((t) => ({ path: `/app/pods/${POD}${t}`, signedIn: true })),
  ];

  it("answers every page with 200, no console error and no CSP refusal", async () => {
    const out = await contextFor(1440, { signedIn: false });
    const inside = await contextFor(1440, { signedIn: true });
    const problems: string[] = [];
    for (const { path: p, signedIn } of allPages()) {
      const { page, status, complaints } = await visit(signedIn ? inside : out, p);
      if (status !== 200) problems.push(`${p}: HTTP ${status}`);
      for (const c of complaints) problems.push(`${p}: ${c}`);
      await page.close();
    }
    await out.close();
    await inside.close();
    expect(problems).toEqual([]);
  }, 180_000);

  it("has no serious or critical accessibility finding on any page (axe-core)", async () => {
    // axe is injected as a script of the test's own: the test's context bypasses the page's CSP for
    // that alone (the CSP test above runs without the bypass).
    const out = await contextFor(1440, { signedIn: false, bypassCSP: true });
    const inside = await contextFor(1440, { signedIn: true, bypassCSP: true });
    const findings: string[] = [];
    for (const { path: p, signedIn } of allPages()) {
      const { page } = await visit(signedIn ? inside : out, p);
      await page.addScriptTag({ content: axeSource });
      // a string, evaluated in the page: the Node project's types have no DOM
      const violations = (await page.evaluate(
        "axe.run(document).then((r) => r.violations)",
      )) as AxeViolation[];
      for (const v of violations) {
        if (v.impact === "serious" || v.impact === "critical") {
          findings.push(
            `${p}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
          );
        }
      }
      await page.close();
    }
    await out.close();
    await inside.close();
    expect(findings).toEqual([]);
  }, 240_000);

  it("renders each main page at 390 and 1440 px wide without horizontal scrolling of the page", async () => {
    const main = [
      "/app/sign-in",
      "/app",
      "/app/new",
      `/app/pods/${POD}`,
      `/app/pods/${POD}/logs`,
      `/app/pods/${POD}/metrics`,
      `/app/pods/${POD}/files`,
      `/app/pods/${POD}/terminal`,
      `/app/pods/${POD}/deploys`,
      `/app/pods/${POD}/backups`,
      "/app/team",
      "/app/account",
      "/app/billing",
    ];
    if (SCREENSHOTS) await mkdir(SCREENSHOTS, { recursive: true });
    const overflow: string[] = [];
    for (const width of [390, 1440]) {
      const out = await contextFor(width, { signedIn: false });
      const inside = await contextFor(width, { signedIn: true });
      for (const p of main) {
        const { page } = await visit(p === "/app/sign-in" ? out : inside, p);
        const wide = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1");
        if (wide) overflow.push(`${p} at ${width} px`);
        if (SCREENSHOTS) {
          const name = `${
            p
              .replace(/^\/app\/?/, "")
              .replaceAll("/", "-")
              .replace(POD, "pod") || "pods"
          }-${width}.png`;
          await (page as Page).screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
        }
        await page.close();
      }
      await out.close();
      await inside.close();
    }
    expect(overflow).toEqual([]);
  }, 180_000);
});
