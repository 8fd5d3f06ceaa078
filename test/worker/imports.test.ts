import { env } from "cloudflare:workers";
import { unzipSync } from "fflate";
import { afterEach, describe, expect, it } from "vitest";
import { refusedHost } from "../../shared/net/addresses";
import { RUNTIMES } from "../../worker/services/imports/runtimes";
import { FakeAgent, insertHost, podEventRecords, until } from "./support/agent";
import { billed } from "./support/billing";
import { call, registerUser, type TestUser } from "./support/client";

/**
 * POST /api/imports and GET /api/imports/sources inside workerd: validation, dry-run trimming, the
 * 422 guide, the catalog, SSRF attempts refused before any byte leaves, URL imports of the import
 * double (test/support/import-site.ts, on 127.0.0.1), and the accepted import handing a staged
 * archive to pod.create on a FakeAgent host.
 */

afterEach(() => FakeAgent.closeAll());

const SITE = env.IMPORT_SITE_URL;
let shared: Promise<TestUser> | undefined;
const user = () => {
  shared ??= registerUser();
  return shared;
};

const importAs = async (body: unknown, u?: TestUser) =>
  call("POST", "/api/imports", body, { token: (u ?? (await user())).token });

const dryRun = async (body: Record<string, unknown>) => {
  const res = await importAs({ ...body, dry_run: true });
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
  return res.body.artifact as {
    type: string;
    preset: string;
    title: string;
    source: string;
    files: { path: string; size: number; content?: string; content_omitted?: true }[];
  };
};

describe("POST /api/imports: validation", () => {
  it.each([
    ["neither url nor paste", {}, /one of url or paste/],
    ["both url and paste", { url: "https://example.com/", paste: { body: "x" } }, /not both/],
    ["an empty paste", { paste: {} }, /paste: empty/],
    ["a blank body", { paste: { body: "   \n" } }, /paste: empty/],
    [
      "body and files",
      { paste: { body: "x", files: [{ path: "a.txt", content: "a" }] } },
      /body or files, not both/,
    ],
    ["a bad name", { paste: { body: "<h1>x</h1>" }, name: "Bad_Name" }, /^name: /],
    ["an unknown plan", { paste: { body: "<h1>x</h1>" }, plan_slug: "huge" }, /plan_slug: unknown plan/],
    ["an unknown type", { paste: { body: "x", type: "pdf" } }, /paste\.type: must be one of/],
    [
      "a path escaping the app",
      { paste: { files: [{ path: "../etc/passwd", content: "x" }] } },
      /paste\.files\[0\]\.path: .*"\.\."/,
    ],
    ["an absolute path", { paste: { files: [{ path: "/etc/passwd", content: "x" }] } }, /must be relative/],
    [
      "a control character in a path",
      { paste: { files: [{ path: "a\nb", content: "x" }] } },
      /control character/,
    ],
    [
      "a duplicate path",
      {
        paste: {
          files: [
            { path: "a", content: "x" },
            { path: "./a", content: "y" },
          ],
        },
      },
      /given twice/,
    ],
    ["an svg that is not one", { paste: { body: "<div>no</div>", type: "svg" } }, /must be an SVG document/],
    [
      "a React component that does not compile",
      { paste: { body: "export default () => <div", type: "react" } },
      /does not compile/,
    ],
    [
      "a <script setup> that does not compile",
      { paste: { body: "<template><p/></template><script setup>const a = </script>", type: "vue" } },
      /script setup> does not compile/,
    ],
    ["a url that is not one", { url: "not a url" }, /url: not a valid absolute URL/],
    ["a file: url", { url: "file:///etc/passwd" }, /only http and https/],
    ["credentials in the url", { url: "https://user:pw@example.com/" }, /credentials/],
  ])("refuses %s with a 400 naming it", async (_what, body, message) => {
    const res = await importAs(body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it("needs a credential and answers 401 without one", async () => {
    const res = await call("POST", "/api/imports", { paste: { body: "<h1>x</h1>" } });
    expect(res.status).toBe(401);
  });
});

describe("POST /api/imports: dry_run", () => {
  it("answers 200 with only the artifact; a detected html paste keeps its content", async () => {
    const res = await importAs({
      paste: { body: "<!doctype html><title>T</title><h1>Hi</h1>" },
      dry_run: true,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(["artifact"]);
    expect(res.body.artifact).toMatchObject({
      source: "paste",
      type: "html",
      preset: "static",
      title: "T",
      files: [{ path: "index.html", size: 42, content: "<!doctype html><title>T</title><h1>Hi</h1>" }],
    });
  });

  it("trims content: over 64 KB omitted, the 128 KB budget spent in order, sizes exact", async () => {
    const big = "a".repeat(70 * 1024);
    const sixty = (c: string) => c.repeat(60 * 1024);
    const a = await dryRun({
      paste: {
        files: [
          { path: "index.html", content: "<h1>x</h1>" },
          { path: "big.txt", content: big },
          { path: "one.txt", content: sixty("1") },
          { path: "two.txt", content: sixty("2") },
          { path: "three.txt", content: sixty("3") },
          { path: "é.txt", content: "é" },
        ],
      },
    });
    const byPath = Object.fromEntries(a.files.map((f) => [f.path, f]));
    expect(byPath["big.txt"]).toMatchObject({ size: big.length, content_omitted: true });
    expect(byPath["big.txt"]?.content).toBeUndefined();
    expect(byPath["one.txt"]?.content?.length).toBe(60 * 1024);
    expect(byPath["two.txt"]?.content?.length).toBe(60 * 1024);
    expect(byPath["three.txt"]).toMatchObject({ size: 60 * 1024, content_omitted: true });
    expect(byPath["é.txt"]).toMatchObject({ size: 2 });
    expect(a.type).toBe("multi");
  });

  it("builds each paste type into a page that needs nothing from a CDN", async () => {
    const react = await dryRun({
      paste: {
        body: 'import { useState } from "react";\nexport default function App() { const [n] = useState(1); return <p>{n}</p>; }',
      },
    });
    expect(react.type).toBe("react");
    expect(react.files.map((f) => f.path)).toEqual([
      "index.html",
      "app.js",
      "src/App.jsx",
      "vendor/react.production.min.js",
      "vendor/react-dom.production.min.js",
    ]);
    const reactDom = react.files.find((f) => f.path === "vendor/react-dom.production.min.js");
    expect(reactDom).toMatchObject({ size: RUNTIMES.react[1].text.length, content_omitted: true });
    const app = react.files.find((f) => f.path === "app.js")?.content ?? "";
    expect(app).toContain("React.createElement");
    expect(app).not.toContain("<p>");
    const html = react.files.find((f) => f.path === "index.html")?.content ?? "";
    expect(html).not.toMatch(/https?:\/\//);

    const vue = await dryRun({
      paste: {
        body: "<template><p>{{ a }}</p></template>\n<script>export default { data: () => ({ a: 1 }) }</script>",
      },
    });
    expect(vue.type).toBe("vue");
    expect(vue.files.map((f) => f.path)).toContain("vendor/vue.global.prod.js");

    const setup = await dryRun({
      paste: {
        body: '<template><p id="n">{{ n * 2 }}</p></template>\n<script setup>\nimport { ref } from "vue";\nconst n = ref(21);\n</script>',
      },
    });
    expect(setup.type).toBe("vue");
    const setupApp = setup.files.find((f) => f.path === "app.js")?.content ?? "";
    expect(setupApp).toMatch(/require\(["']vue["']\)/);
    expect(setupApp).not.toContain("<script setup>");

    const svg = await dryRun({ paste: { body: '<svg xmlns="http://www.w3.org/2000/svg"></svg>' } });
    expect(svg).toMatchObject({ type: "svg", preset: "static" });
    expect(svg.files.map((f) => f.path)).toEqual(["index.html", "image.svg"]);

    const mermaid = await dryRun({ paste: { body: "graph TD\n A-->B" } });
    expect(mermaid.type).toBe("mermaid");
    expect(mermaid.files.find((f) => f.path === "index.html")?.content).toContain("A--&gt;B");

    const php = await dryRun({ paste: { body: "<?php echo 1;", type: "code", language: "php" } });
    expect(php).toMatchObject({ type: "code", preset: "php" });
    expect(php.files.map((f) => f.path)).toEqual(["index.php"]);

    const node = await dryRun({
      paste: {
        files: [
          { path: "package.json", content: "{}" },
          { path: "server.js", content: "" },
        ],
      },
    });
    expect(node).toMatchObject({ type: "multi", preset: "nodejs" });
  });

  it("escapes pasted code and titles in the pages it generates (an attacker's markup stays text)", async () => {
    const evil = '</code></pre><script>alert("x")</script>';
    const code = await dryRun({
      paste: { body: evil, type: "code", language: "javascript", title: "<img src=x onerror=alert(1)>" },
    });
    const html = code.files.find((f) => f.path === "index.html")?.content ?? "";
    expect(html).not.toContain('<script>alert("x")');
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;");
    expect(code.files.find((f) => f.path === "source.js")?.content).toBe(evil);

    const mermaid = await dryRun({
      paste: { body: `graph TD\n A["</pre><script>alert(1)</script>"]`, type: "mermaid" },
    });
    expect(mermaid.files.find((f) => f.path === "index.html")?.content).not.toContain("<script>alert(1)");
  });

  it("a language is looked up among the languages only: constructor, __proto__ and toString are 400, an unknown one is plain text", async () => {
    for (const language of ["constructor", "__proto__", "toString", "hasOwnProperty", "Constructor"]) {
      const res = await importAs({ paste: { body: "x = 1", type: "code", language }, dry_run: true });
      expect(res.status, language).toBe(400);
      expect(res.body.error).toBe(`paste.language: ${language} is not a language name`);
    }
    const kotlin = await dryRun({ paste: { body: "val x = 1", type: "code", language: "kotlin" } });
    expect(kotlin.files.map((f) => f.path)).toContain("source.txt");
    expect(kotlin.files.find((f) => f.path === "index.html")?.content).toContain("<pre><code>val x = 1");
    const python = await dryRun({ paste: { body: "x = 1", type: "code", language: "Python" } });
    expect(python.files.map((f) => f.path)).toContain("source.py");
  });

  it("a pathological paste costs linear time (no backtracking on tenant text)", async () => {
    const body = `${"<".repeat(200_000)}${"a".repeat(200_000)}`;
    const started = Date.now();
    const a = await dryRun({ paste: { body, title: "-".repeat(200) } });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(a.files[0]?.size).toBe(400_000);
  });
});

describe("URL imports", () => {
  it.each([
    ["a private address", "http://10.0.0.1/"],
    ["cloud metadata", "http://169.254.169.254/latest/meta-data/"],
    ["localhost by name", "http://localhost:8787/"],
    ["a localhost subdomain", "http://evil.localhost/"],
    ["IPv6 loopback", "http://[::1]/"],
    ["IPv4-mapped IPv6", "http://[::ffff:10.0.0.1]/"],
    ["IPv4-mapped metadata in hex", "http://[::ffff:a9fe:a9fe]/"],
    ["a unique local IPv6 address", "http://[fd00::1]/"],
    ["link-local IPv6", "http://[fe80::1]/"],
    ["the unspecified address", "http://0.0.0.0/"],
    ["a decimal IPv4", "http://167772161/"],
    ["a hex IPv4", "http://0xa9.0xfe.0xa9.0xfe/"],
    ["an octal IPv4", "http://0251.0376.0251.0376/"],
    ["a short IPv4", "http://10.1/"],
    ["a 192.168 address", "http://192.168.1.1/"],
    ["a 172.16 address", "http://172.20.0.1/"],
    ["carrier-grade NAT", "http://100.100.100.200/"],
    ["an internal name", "http://metadata.google.internal/"],
    ["a single-label name", "http://intranet/"],
    // translation and tunnels, whatever public IPv4 address they carry; documentation ranges
    ["NAT64 of a public address", "http://[64:ff9b::808:808]/"],
    ["local-use NAT64", "http://[64:ff9b:1::a00:1]/"],
    ["6to4 of a public address", "http://[2002:808:808::1]/"],
    ["Teredo", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"],
    ["an IPv6 documentation address", "http://[2001:db8::1]/"],
    ["the new IPv6 documentation range", "http://[3fff::1]/"],
    ["an IPv6 benchmarking address", "http://[2001:2::1]/"],
    ["discard-only IPv6", "http://[100::1]/"],
    ["IPv6 outside global unicast", "http://[4000::1]/"],
    ["an IPv4 documentation address", "http://203.0.113.7/"],
  ])("refuses %s before fetching (%s)", async (_what, url) => {
    const res = await importAs({ url, dry_run: true });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatch(/^url: /);
  });

  it("lets public addresses through: the refusals above are ranges, not all of IPv6", () => {
    for (const host of [
      "[2606:4700:4700::1111]",
      "[2a00:1450:4001::200e]",
      "[2001:4860::8888]",
      "93.184.215.14",
    ])
      expect(refusedHost(host, false), host).toBeNull();
  });

  it.each([
    ["metadata", "http://169.254.169.254/latest/meta-data/"],
    ["a private address", "http://10.1.2.3/"],
    ["localhost", "http://localhost/"],
    ["IPv6 loopback", "http://[::1]:8080/"],
  ])("refuses a redirect to %s", async (_what, to) => {
    const res = await importAs({
      url: `${SITE}/redirect?to=${encodeURIComponent(to)}`,
      mode: "site",
      dry_run: true,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatch(/redirected from/);
  });

  describe("names that resolve inward (DNS-over-HTTPS double)", () => {
    const dnsBase = () => env.DNS_RESOLVER_URL?.replace(/\/dns-query$/, "") ?? "";
    const setRecords = async (type: "a" | "aaaa", name: string, values: string[]) => {
      const res = await fetch(`${dnsBase()}/__double/${type}/${name}`, {
        method: "PUT",
        body: JSON.stringify({ values }),
      });
      expect(res.status).toBe(200);
    };

    it.each([
      ["a", "inward-10.imports.test", ["10.0.0.5"], /resolves to 10\.0\.0\.5, which is a private address/],
      [
        "a",
        "inward-meta.imports.test",
        ["93.184.215.14", "169.254.169.254"],
        /resolves to 169\.254\.169\.254/,
      ],
      [
        "a",
        "inward-loop.imports.test",
        ["127.0.0.1"],
        /resolves to 127\.0\.0\.1, which is a loopback address/,
      ],
      ["aaaa", "inward-v6.imports.test", ["::1"], /resolves to ::1/],
      ["aaaa", "inward-mapped.imports.test", ["::ffff:10.0.0.1"], /resolves to ::ffff:10\.0\.0\.1/],
      ["aaaa", "inward-nat64.imports.test", ["64:ff9b::5db8:d70e"], /which is a NAT64 address/],
      ["aaaa", "inward-teredo.imports.test", ["2001:0:4136:e378::1"], /which is a Teredo address/],
      ["aaaa", "inward-6to4.imports.test", ["2002:5db8:d70e::1"], /which is a 6to4 address/],
    ] as const)("refuses a name whose %s record is inward (%s)", async (type, name, values, message) => {
      await setRecords(type, name, [...values]);
      const res = await importAs({ url: `http://${name}/`, mode: "site", dry_run: true });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatch(message);
    });

    it("refuses a redirect to a name that resolves inward, and a name that does not resolve", async () => {
      await setRecords("a", "inward-hop.imports.test", ["192.168.0.10"]);
      const hop = await importAs({
        url: `${SITE}/redirect?to=${encodeURIComponent("http://inward-hop.imports.test/x")}`,
        mode: "site",
        dry_run: true,
      });
      expect(hop.status).toBe(400);
      expect(hop.body.error).toMatch(/resolves to 192\.168\.0\.10.*redirected from/);
      const none = await importAs({ url: "http://nowhere.imports.test/", mode: "site", dry_run: true });
      expect(none.status).toBe(400);
      expect(none.body.error).toMatch(/does not resolve/);
    });
  });

  it("a platform whose code cannot be fetched is a 422 with its guide; mode site snapshots it instead", async () => {
    const res = await importAs({ url: "https://my-shop.wixsite.com/home" });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatch(/Wix/);
    expect(res.body.guide).toMatchObject({ slug: "wix", automatic: false, route: "url" });
    expect(res.body.guide.steps.length).toBeGreaterThan(0);
    expect(res.body.guide.transfer.headline).toEqual(expect.any(String));
  });

  it("snapshots a site: same-origin pages, assets, links rewritten to relative paths; preview shows only index.html", async () => {
    const a = await dryRun({ url: `${SITE}/site/`, mode: "site" });
    expect(a).toMatchObject({ source: "site", type: "multi", preset: "static", title: "Tiny Site" });
    const paths = a.files.map((f) => f.path).sort();
    expect(paths).toEqual(
      [
        "about/index.html",
        "index.html",
        "blog/index.html",
        "blog/post-1.html",
        "logo.png",
        "logo-2x.png",
        "style.css",
      ]
        .map((p) => `site/${p}`)
        .map((p) => (p === "site/index.html" ? "index.html" : p))
        .sort(),
    );
    const index = a.files.find((f) => f.path === "index.html");
    expect(index?.content).toContain('href="site/about/index.html"');
    expect(index?.content).toContain('href="site/about/index.html#team"');
    expect(index?.content).toContain('href="site/blog/index.html"');
    expect(index?.content).toContain('src="site/logo.png"');
    expect(index?.content).toContain('href="https://example.com/elsewhere"');
    expect(index?.content).toContain(
      'srcset="site/logo.png 1x, site/logo-2x.png 2x, https://cdn.example.com/x.png 3x"',
    );
    expect(a.files.find((f) => f.path === "site/logo.png")).toMatchObject({
      size: 70,
      content_omitted: true,
    });
    expect(a.files.find((f) => f.path === "site/about/index.html")?.content).toBeUndefined();
  });

  it("single_page and max_pages cap the crawl", async () => {
    const one = await dryRun({ url: `${SITE}/site/`, single_page: true });
    expect(one.files.filter((f) => f.path.endsWith(".html")).map((f) => f.path)).toEqual(["index.html"]);
    const many = await dryRun({ url: `${SITE}/many/?pages=30`, max_pages: 5 });
    expect(many.files.filter((f) => f.path.endsWith(".html"))).toHaveLength(5);
  });

  it("reads an assistant artifact page of each kind (mode artifact) into the right type", async () => {
    const expected: [string, string][] = [
      ["react", "react"],
      ["vue", "vue"],
      ["svg", "svg"],
      ["mermaid", "mermaid"],
      ["code", "code"],
      ["html", "html"],
    ];
    for (const [path, type] of expected) {
      const a = await dryRun({ url: `${SITE}/artifact/${path}`, mode: "artifact" });
      expect(a.type, path).toBe(type);
    }
  });

  it("a redirect loop and a page past the size cap are 400s naming the problem", async () => {
    const loop = await importAs({ url: `${SITE}/loop`, mode: "site", dry_run: true });
    expect(loop.status).toBe(400);
    expect(loop.body.error).toMatch(/more than 5 redirects/);
    const huge = await importAs({ url: `${SITE}/huge/`, mode: "site", dry_run: true });
    expect(huge.status).toBe(400);
    expect(huge.body.error).toMatch(/larger than 2097152 bytes/);
  });

  it("a site that does not answer is a 400 naming the URL", async () => {
    const res = await importAs({ url: `${SITE}/nowhere`, mode: "site", dry_run: true });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/answered 404/);
  });
});

describe("GET /api/imports/sources", () => {
  it("is public: routes and platforms with guides", async () => {
    const res = await call("GET", "/api/imports/sources");
    expect(res.status).toBe(200);
    expect(res.body.routes.map((r: { route: string }) => r.route)).toEqual([
      "url",
      "artifact",
      "paste",
      "zip",
      "repository",
    ]);
    for (const p of res.body.platforms) {
      expect(p).toMatchObject({
        automatic: false,
        host_examples: expect.any(Array),
        steps: expect.any(Array),
      });
      expect(p.hosts).toBeUndefined();
    }
    expect(res.body.detected_source).toBeUndefined();
  });

  it.each([
    ["https://claude.ai/public/artifacts/0a1b2c", "claude", false],
    ["https://chatgpt.com/canvas/shared/abc", "chatgpt", false],
    ["https://example.com/", "site", false],
    ["https://shop.wixsite.com/x", "site", true],
    ["https://replit.com/@ada/app", "site", true],
    ["ftp://example.com/", "unknown", false],
    ["not a url", "unknown", false],
  ])("classifies %s as %s", async (url, source, guided) => {
    const res = await call("GET", `/api/imports/sources?url=${encodeURIComponent(url)}`);
    expect(res.status).toBe(200);
    expect(res.body.detected_source).toBe(source);
    expect(res.body.guide !== undefined).toBe(guided);
  });

  it("is not rate limited (25 calls from one IP)", async () => {
    for (let i = 0; i < 25; i++) {
      const res = await call("GET", "/api/imports/sources", undefined, { ip: "203.0.113.77" });
      expect(res.status).toBe(200);
    }
  });
});

describe("POST /api/imports: accepted", () => {
  it("202: a pod named from the title, the artifact staged as the create's seed, an imported event", async () => {
    const [u, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const title = `Hello Import ${crypto.randomUUID().slice(0, 6)}`;
    const res = await importAs({ paste: { body: "<h1>hello import</h1>", title }, server_id: host.id }, u);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const slug = title.toLowerCase().replaceAll(" ", "-");
    expect(res.body.pod).toMatchObject({ name: slug, status: "creating", preset: "static" });
    expect(res.body.artifact.files).toEqual([{ path: "index.html", size: 21 }]);
    expect(res.body.message).toEqual(expect.any(String));

    const create = await agent.next("control:call");
    expect(create.op).toBe("pod.create");
    const blobKey = (create.params as { seed?: { blobKey: string } }).seed?.blobKey ?? "";
    const staged = await env.BLOBS.get(blobKey);
    const files = unzipSync(new Uint8Array((await staged?.arrayBuffer()) ?? new ArrayBuffer(0)));
    expect(new TextDecoder().decode(files["index.html"])).toBe("<h1>hello import</h1>");
    agent.ok(create, {
      name: slug,
      state: "running",
      ip: "10.0.0.9",
      reload: { ok: true, services: ["web"], depsInstalled: null, unsupported: [] },
    });
    const events = await until(async () => {
      const list = await podEventRecords(res.body.pod.id);
      return list.some((e) => e.type === "imported") ? list : null;
    }, "the imported event");
    const imported = events.find((e) => e.type === "imported");
    expect(imported?.message).toMatch(/imported html/);

    // the same title again: the derived name is taken, so it gets a suffix
    const again = await importAs({ paste: { body: "<h1>x</h1>", title }, server_id: host.id }, u);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.pod.name).toMatch(new RegExp(`^${slug}-[a-z0-9]{6}$`));
    // an explicit name that is taken is the caller's conflict
    const taken = await importAs({ paste: { body: "<h1>x</h1>" }, name: slug, server_id: host.id }, u);
    expect(taken.status).toBe(409);
    // refused before any fetch: example.com cannot be reached from here, yet the answer is the 409
    const early = await importAs({ url: "https://example.com/", mode: "site", name: slug }, u);
    expect(early.status, JSON.stringify(early.body)).toBe(409);
    expect(await env.BLOBS.list({ prefix: "staging/incoming/" }).then((l) => l.objects.length)).toBe(0);
  });

  it("402 without a payment method when billing is on, 503 when the server cannot take it; nothing stays staged", async () => {
    const u = await registerUser();
    const refused = await call("POST", "/api/imports", { paste: { body: "<h1>x</h1>" } }, billed(u));
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    const offline = await insertHost();
    const full = await importAs({ paste: { body: "<h1>x</h1>" }, server_id: offline.id }, u);
    expect(full.status, JSON.stringify(full.body)).toBe(503);
    expect(await env.BLOBS.list({ prefix: "staging/incoming/" }).then((l) => l.objects.length)).toBe(0);
  });

  it("is rate limited at 20 per hour per IP (429 with Retry-After)", async () => {
    const u = await user();
    let last = 0;
    let retry: string | null = null;
    for (let i = 0; i < 21; i++) {
      const res = await call(
        "POST",
        "/api/imports",
        { paste: { body: "<p>x</p>" }, dry_run: true },
        { token: u.token, ip: "198.51.100.99" },
      );
      last = res.status;
      retry = res.headers.get("retry-after");
    }
    expect(last).toBe(429);
    expect(Number(retry)).toBeGreaterThan(0);
  });
});
