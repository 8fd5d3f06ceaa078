import { request } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import {
  ARTIFACT_SOURCES,
  type ImportSiteDouble,
  PIXEL_PNG,
  startImportSiteDouble,
} from "../support/import-site";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * Imports end to end (docs/imports.md): the Worker in workerd fetching the import double on 127.0.0.1
 * (test/support/import-site.ts; ALLOW_IMPORT_LOOPBACK), the agent creating each pod and unpacking the
 * import into it, and nginx serving the result. Pages that need a browser to draw them (React, Vue,
 * Mermaid, highlighted code) are opened in Debian's Chromium, which must find everything on the pod.
 */

/** A binary GET through the ingress. */
const getBytes = (port: number, hostName: string, path: string) =>
  new Promise<Buffer>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, agent: false, headers: { host: hostName } },
      (res) => {
        if (res.statusCode !== 200)
          reject(new Error(`${hostName}${path} answered ${res.statusCode} ${JSON.stringify(res.headers)}`));
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      },
    );
    req.on("error", reject);
    req.end();
  });

describe("imports end to end", () => {
  let site: ImportSiteDouble;
  let stack: Stack;
  let api: ApiClient;
  let browser: Browser;

  const host = (pod: string) => `${pod}.pods.localhost`;
  const get = (pod: string, path = "/") => httpGet(stack.edgePort, host(pod), path);

  /** Starts an import: 202 with the pod's name. */
  async function started(body: Record<string, unknown>): Promise<string> {
    const res = await api.post("/api/imports", body);
    expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(202);
    return res.body.pod.name as string;
  }

  /** Imports, then waits for the pod to run with its `imported` event recorded. */
  async function imported(body: Record<string, unknown>): Promise<string> {
    return ready(await started(body));
  }

  async function ready(name: string): Promise<string> {
    await waitForPodStatus(api, name, "running", 120_000);
    await waitFor(
      `${name}'s imported event`,
      async () => {
        const events = await api.get(`/api/pods/${name}/events?type=imported`);
        return events.body.events?.length ? true : undefined;
      },
      60_000,
    );
    return name;
  }

  /** The pod's page in Chromium: the text of `selector` once it shows, and every origin it asked. */
  async function rendered(pod: string, selector: string): Promise<{ text: string; origins: Set<string> }> {
    const page = await browser.newPage();
    const origins = new Set<string>();
    const problems: string[] = [];
    page.on("request", (r) => origins.add(new URL(r.url()).origin));
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
    page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    try {
      await page.goto(`http://${host(pod)}:${stack.edgePort}/`);
      const el = await page.waitForSelector(selector, { timeout: 60_000 }).catch((err: Error) => {
        // what the page itself said is what explains a selector that never showed
        throw new Error(`${err.message}\n${problems.join("\n") || "(no page errors)"}`);
      });
      return { text: (await el.textContent()) ?? "", origins };
    } finally {
      await page.close();
    }
  }

  beforeAll(async () => {
    site = await startImportSiteDouble();
    [stack, browser] = await Promise.all([startStack("imp"), launchChromium()]);
    api = (await signUp(stack.api)).api;
    await waitForHostOnline(api);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await site?.close();
  }, 120_000);

  it("pastes of every type become pods that serve them (drawn in a browser, nothing from another origin)", async () => {
    // Started one after another (admission picks each pod's SSH port), then awaited together.
    const names: string[] = [];
    for (const body of [
      {
        paste: { body: "<!doctype html><title>Pasted</title><h1>pasted html</h1>" },
        name: "imp-html",
      },
      { paste: { body: ARTIFACT_SOURCES.react, title: "Imp React" } },
      { paste: { body: ARTIFACT_SOURCES.vue, type: "vue" }, name: "imp-vue" },
      { paste: { body: ARTIFACT_SOURCES.svg }, name: "imp-svg" },
      { paste: { body: ARTIFACT_SOURCES.mermaid }, name: "imp-mermaid" },
      {
        paste: { body: ARTIFACT_SOURCES.code, type: "code", language: "python" },
        name: "imp-code",
      },
      {
        paste: { body: "<?php echo 'php says ' . (6 * 7);", type: "code", language: "php" },
        name: "imp-php",
      },
      {
        paste: {
          body: '<template><p id="n">{{ n * 2 }}</p></template>\n<script setup lang="ts">\nimport { ref } from "vue";\nconst n = ref<number>(21);\n</script>',
        },
        name: "imp-vue-setup",
      },
    ])
      names.push(await started(body));
    const [html, react, vue, svg, mermaid, code, php, vueSetup] = (await Promise.all(names.map(ready))) as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    expect(react).toBe("imp-react");

    expect((await get(html)).body).toContain("<h1>pasted html</h1>");
    expect((await get(svg, "/image.svg")).body).toBe(ARTIFACT_SOURCES.svg);
    expect((await get(php)).body).toBe("php says 42");

    const origin = (pod: string) => `http://${host(pod)}:${stack.edgePort}`;
    const reactPage = await rendered(react, "#count");
    expect(reactPage.text).toBe("count is 42 & rising");
    expect([...reactPage.origins]).toEqual([origin(react)]);
    const vuePage = await rendered(vue, "#msg");
    expect(vuePage.text).toBe("hello from vue");
    expect([...vuePage.origins]).toEqual([origin(vue)]);
    const setupPage = await rendered(vueSetup, "#n");
    expect(setupPage.text).toBe("42");
    const mermaidPage = await rendered(mermaid, "pre.mermaid svg");
    expect(mermaidPage.text).toContain("Import");
    expect([...mermaidPage.origins]).toEqual([origin(mermaid)]);
    const codePage = await rendered(code, "code.hljs .hljs-keyword");
    expect(codePage.text).toBe("def");
    expect((await get(code)).body).toContain("&lt;hello {name}&gt;");
  }, 300_000);

  it("a files project with package.json is installed and built on the pod, then served by its server", async () => {
    const name = await imported({
      name: "imp-node",
      paste: {
        files: [
          {
            path: "package.json",
            content: JSON.stringify({
              name: "imp-node",
              scripts: { build: "node build.js", start: "node server.js" },
            }),
          },
          { path: "build.js", content: 'require("fs").writeFileSync("built.txt", "built on the pod");' },
          {
            path: "server.js",
            content:
              'require("http").createServer((q, s) => s.end(require("fs").readFileSync("built.txt", "utf8"))).listen(process.env.PORT || 3000);',
          },
        ],
      },
    });
    const served = await waitFor(
      "the node app to answer",
      async () => {
        const r = await get(name);
        return r.status === 200 && r.body === "built on the pod" ? r : undefined;
      },
      60_000,
    );
    expect(served.body).toBe("built on the pod");
  }, 240_000);

  it("a live site's snapshot is served with its links rewritten to relative paths", async () => {
    const name = await imported({ url: `${site.url}/site/`, mode: "site", name: "imp-site" });
    const index = await get(name);
    expect(index.body).toContain("Home of the tiny site");
    expect(index.body).toContain('href="site/about/index.html"');
    expect((await get(name, "/site/about/index.html")).body).toContain("About us");
    expect((await get(name, "/site/blog/post-1.html")).body).toContain('href="../about/index.html"');
    expect(await getBytes(stack.edgePort, host(name), "/site/logo.png")).toEqual(PIXEL_PNG);
  }, 240_000);

  it("an assistant's artifact page is turned into a pod of its type", async () => {
    const name = await imported({
      url: `${site.url}/artifact/react`,
      mode: "artifact",
      name: "imp-artifact",
    });
    const page = await rendered(name, "#count");
    expect(page.text).toBe("count is 42 & rising");
  }, 240_000);
});
