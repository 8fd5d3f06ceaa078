import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * What URL imports fetch in tests, on 127.0.0.1: a small multi-page site (`/site/`), a site of any
 * number of pages for the bench (`/many/?pages=N`), AI-assistant artifact pages of each kind
 * (`/artifact/<type>`: the source in a `<pre><code class="language-…">` block, or a raw SVG file),
 * `/loop` (redirects to itself), `/huge/` (a 3 MiB page, no length up front), and
 * `/redirect?to=<url>`, which answers 302 to wherever it is told (the SSRF tests aim it at
 * private addresses).
 */

export interface ImportSiteDouble {
  url: string;
  close(): Promise<void>;
}

const escapeText = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** A 1×1 PNG: binary bytes a snapshot must keep exactly. */
export const PIXEL_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

export const ARTIFACT_SOURCES = {
  react: `import { useState } from "react";
export default function Counter() {
  const [n, setN] = useState(41);
  return <button id="count" onClick={() => setN(n + 1)}>count is {n + 1} &amp; rising</button>;
}`,
  vue: `<template><p id="msg">{{ greeting }} from vue</p></template>
<script>
export default { data() { return { greeting: "hello" }; } };
</script>
<style>#msg { color: green; }</style>`,
  svg: `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><circle cx="20" cy="20" r="18" fill="teal"/></svg>`,
  mermaid: `graph TD
  A[Import] --> B{Type?}
  B --> C[Pod]`,
  code: `def greet(name):
    return f"<hello {name}>"
`,
};

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><link rel="stylesheet" href="/site/style.css"></head><body>${body}</body></html>`;

const SITE: Record<string, { type: string; body: string | Buffer }> = {
  "/site/": {
    type: "text/html; charset=utf-8",
    body: page(
      "Tiny Site",
      `<h1>Home of the tiny site</h1><img src="logo.png" alt="logo">
<a href="/site/about">About</a> <a href="blog/">Blog</a> <a href="https://example.com/elsewhere">Elsewhere</a>
<a href="/site/about#team">Team</a>
<img srcset="logo.png 1x, /site/logo-2x.png 2x, https://cdn.example.com/x.png 3x" alt="sized">`,
    ),
  },
  "/site/about": { type: "text/html", body: page("About", `<h1>About us</h1><a href="/site/">Home</a>`) },
  "/site/blog/": {
    type: "text/html",
    body: page("Blog", `<h1>Blog</h1><a href="post-1.html">First post</a><a href="../">Home</a>`),
  },
  "/site/blog/post-1.html": {
    type: "text/html",
    body: page("Post 1", `<h1>First post</h1><img src="/site/logo.png"><a href="/site/about">About</a>`),
  },
  "/site/style.css": { type: "text/css", body: "h1 { color: rebeccapurple; }" },
  "/site/logo.png": { type: "image/png", body: PIXEL_PNG },
  "/site/logo-2x.png": { type: "image/png", body: PIXEL_PNG },
};

function artifactPage(kind: keyof typeof ARTIFACT_SOURCES | "html"): { type: string; body: string } {
  if (kind === "svg") return { type: "image/svg+xml", body: ARTIFACT_SOURCES.svg };
  if (kind === "html")
    return {
      type: "text/html",
      body: "<!doctype html><title>Shared page</title><h1 id=shared>shared html artifact</h1>",
    };
  const lang = { react: "jsx", vue: "vue", mermaid: "mermaid", code: "python" }[kind];
  return {
    type: "text/html",
    body: `<!doctype html><html><head><title>Shared ${kind} artifact</title></head><body><nav>chat chrome</nav>
<pre><code class="language-${lang}">${escapeText(ARTIFACT_SOURCES[kind])}</code></pre></body></html>`,
  };
}

export async function startImportSiteDouble(): Promise<ImportSiteDouble> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://double");
    if (url.pathname === "/loop") {
      res.writeHead(302, { location: "/loop" });
      return res.end();
    }
    if (url.pathname === "/huge/") {
      // a page past the snapshot's 2 MiB cap per page, without a length up front
      res.writeHead(200, { "content-type": "text/html" });
      const chunk = "<p>".padEnd(64 * 1024, "x");
      for (let i = 0; i < 48; i++) res.write(chunk);
      return res.end();
    }
    if (url.pathname === "/redirect") {
      res.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
      return res.end();
    }
    if (url.pathname === "/many/" || url.pathname.startsWith("/many/p")) {
      const pages = Math.min(Number(url.searchParams.get("pages") ?? "20") || 20, 200);
      const links = Array.from(
        { length: pages - 1 },
        (_, i) => `<a href="/many/p${i + 1}?pages=${pages}">page ${i + 1}</a>`,
      ).join(" ");
      const name = url.pathname === "/many/" ? "Many pages" : `Page ${url.pathname.slice(7)}`;
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(page(name, `<h1>${name}</h1><img src="/site/logo.png">${links}`));
    }
    const artifact = url.pathname.match(/^\/artifact\/(react|vue|svg|mermaid|code|html)$/);
    if (artifact) {
      const a = artifactPage(artifact[1] as keyof typeof ARTIFACT_SOURCES);
      res.writeHead(200, { "content-type": a.type });
      return res.end(a.body);
    }
    const entry = SITE[url.pathname];
    if (!entry) {
      res.writeHead(404, { "content-type": "text/plain" });
      return res.end("not found");
    }
    res.writeHead(200, { "content-type": entry.type });
    res.end(entry.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
