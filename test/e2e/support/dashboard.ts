import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Page } from "playwright-core";

/**
 * What the dashboard's browser tests share (test/e2e/dashboard.test.ts and its steps in
 * test/e2e/dashboard/): signing a browser context in with a session token, recording what a page
 * complains about (script errors, CSP refusals), axe-core run in the page, and the sideways-scroll check.
 * The Node project's types have no DOM: what runs in the page is passed as a string.
 */

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * A new browser context whose requests carry `token` as the `pod_session` cookie (none: signed
 * out). `url` is the stack's PUBLIC_URL (the dashboard answers on that host only).
 */
export async function signedInContext(
  browser: Browser,
  url: string,
  token: string | undefined,
  options: { width?: number; height?: number } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
  });
  if (token) await context.addCookies([{ name: "pod_session", value: token, url }]);
  return context;
}

/**
 * Records the page's script errors and console errors (a CSP refusal is one) into `into`.
 * `ignoreFailedLoads`: a refused API call is the browser's "Failed to load resource" line, which
 * the form itself shows; pages that provoke refusals on purpose leave it out.
 */
export function recordComplaints(page: Page, into: string[], options: { ignoreFailedLoads?: boolean } = {}) {
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    if (options.ignoreFailedLoads && msg.text().startsWith("Failed to load resource")) return;
    into.push(msg.text());
  });
  page.on("pageerror", (err) => into.push(String(err)));
  return into;
}

/**
 * axe-core's serious and critical findings on the page as it is now, each prefixed with `label`.
 * axe is evaluated through the DevTools protocol, which the page's CSP does not govern (as the
 * console's own input): the page runs under its real CSP while it is audited.
 */
export async function axeFindings(page: Page, label: string): Promise<string[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(axeSource);
  // only violations are collected (passes and the rest are not needed): the same findings, sooner
  const violations = (await page.evaluate(
    'axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${label}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    );
}

/** Whether the page as a whole scrolls sideways (tables and logs scroll in their own boxes). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return (await page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")) as boolean;
}

/**
 * Each path at each width, signed in, in a context of its own under the pages' real CSP: answers
 * 200, console errors (a CSP refusal is one), sideways scrolling and axe's serious or critical
 * findings, as one list of problems (empty when all is well). `ready` waits for what a page draws
 * after load.
 */
export async function auditPages(
  browser: Browser,
  base: string,
  token: string,
  paths: string[],
  options: { widths?: number[]; ready?: (page: Page, path: string) => Promise<void> } = {},
): Promise<string[]> {
  const problems: string[] = [];
  for (const width of options.widths ?? [390, 1440]) {
    const context = await signedInContext(browser, base, token, { width });
    try {
      // one tab navigated from path to path: the renderer keeps axe compiled between them
      const tab = await context.newPage();
      const logged = recordComplaints(tab, []);
      for (const path of paths) {
        const status = (await tab.goto(`${base}${path}`))?.status();
        if (status !== 200) problems.push(`${path} at ${width} px: HTTP ${status}`);
        await options.ready?.(tab, path);
        if (await scrollsSideways(tab)) problems.push(`${path} scrolls sideways at ${width} px`);
        problems.push(...(await axeFindings(tab, `${path} at ${width} px`)));
        // read after axe's run, which gives late scripts (live parts, polls) their time
        // (what the tab logs as it leaves the page is counted for the next one)
        for (const line of logged.splice(0)) problems.push(`${path} at ${width} px logged: ${line}`);
      }
    } finally {
      await context.close();
    }
  }
  return problems;
}

/** Records every value the element's attribute takes, into `window[key]` (in the page). */
export const watchAttribute = (page: Page, selector: string, attribute: string, key = "seen") =>
  page.evaluate(`(() => {
    const el = document.querySelector(${JSON.stringify(selector)});
    window[${JSON.stringify(key)}] = [];
    new MutationObserver(() => window[${JSON.stringify(key)}].push(el.getAttribute(${JSON.stringify(attribute)}))).observe(el, {
      attributes: true,
      attributeFilter: [${JSON.stringify(attribute)}],
    });
  })()`);
