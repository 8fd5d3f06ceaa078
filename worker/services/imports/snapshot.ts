import { fail, ok, type Result } from "../../../shared/errors";
import { type Artifact, type ArtifactFile, slugOf } from "./artifact";
import { type FetchBudget, guardedFetch } from "./fetch";
import { decodeEntities, pageTitle } from "./page-read";
import { checkProjectPath } from "./paths";

/**
 * A live site's static snapshot: same-origin pages breadth-first from the given one (up to
 * `maxPages`), the same-origin assets they use (images, stylesheets, scripts, media), and every link
 * between them rewritten with HTMLRewriter to a relative path, so the copy works under any host
 * name. Links to pages left out and to other origins become absolute links to the original site.
 * Bounded in pages, assets, bytes and time; a crawl whose budget runs out keeps what it has (the
 * first page at least, else the import fails).
 */

export const MAX_PAGES_LIMIT = 200;
const MAX_ASSETS = 500;
const PAGE_MAX_BYTES = 2 * 1024 * 1024;
const ASSET_MAX_BYTES = 10 * 1024 * 1024;
const TOTAL_MAX_BYTES = 64 * 1024 * 1024;
/** fetches in flight at once */
const PARALLEL = 6;

/** Elements whose attribute names a page or an asset. */
const LINKS: [selector: string, attribute: string, kind: "page" | "asset"][] = [
  ["a[href]", "href", "page"],
  ["area[href]", "href", "page"],
  ["link[href]", "href", "asset"],
  ["img[src]", "src", "asset"],
  ["script[src]", "src", "asset"],
  ["source[src]", "src", "asset"],
  ["video[src]", "src", "asset"],
  ["video[poster]", "poster", "asset"],
  ["audio[src]", "src", "asset"],
  ["iframe[src]", "src", "page"],
];

/** Same-origin key of a URL: its path (queries and fragments do not make another file). */
const keyOf = (u: URL) => u.pathname;

interface Page {
  url: URL;
  file: string;
  html: string;
}

/** The file a same-origin URL is saved as, or null when its path cannot be one. */
function fileOf(u: URL, page: boolean): string | null {
  let path = u.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // an undecodable path is saved under its encoded spelling
  }
  let rel = path.startsWith("/") ? path.slice(1) : path;
  if (page) {
    const last = rel.slice(rel.lastIndexOf("/") + 1).toLowerCase();
    if (!(last.endsWith(".html") || last.endsWith(".htm")))
      rel = rel === "" || rel.endsWith("/") ? `${rel}index.html` : `${rel}/index.html`;
  }
  const checked = checkProjectPath(rel);
  return checked.ok ? checked.value : null;
}

/** `to` relative to the folder `from` lives in. */
export function relativePath(from: string, to: string): string {
  const a = from.split("/").slice(0, -1);
  const b = to.split("/");
  let common = 0;
  while (common < a.length && common < b.length - 1 && a[common] === b[common]) common++;
  return [...new Array(a.length - common).fill(".."), ...b.slice(common)].join("/");
}

/** Same-origin links of a page, by kind. */
async function linksOf(page: Page): Promise<{ pages: URL[]; assets: URL[] }> {
  const pages: URL[] = [];
  const assets: URL[] = [];
  let rewriter = new HTMLRewriter();
  for (const [selector, attribute, kind] of LINKS) {
    rewriter = rewriter.on(selector, {
      element(el) {
        const u = resolve(el.getAttribute(attribute), page.url);
        if (!u || u.origin !== page.url.origin) return;
        // <link rel="alternate|canonical|next"> names pages, not assets
        if (selector === "link[href]") {
          const rel = (el.getAttribute("rel") ?? "").toLowerCase();
          if (
            !(
              rel.includes("stylesheet") ||
              rel.includes("icon") ||
              rel.includes("preload") ||
              rel.includes("manifest")
            )
          )
            return;
        }
        (kind === "page" ? pages : assets).push(u);
      },
    });
  }
  rewriter = rewriter.on("[srcset]", {
    element(el) {
      for (const candidate of srcsetUrls(el.getAttribute("srcset") ?? "")) {
        const u = resolve(candidate.url, page.url);
        if (u && u.origin === page.url.origin) assets.push(u);
      }
    },
  });
  await rewriter.transform(new Response(page.html)).arrayBuffer();
  return { pages, assets };
}

function resolve(value: string | null, base: URL): URL | null {
  if (!value) return null;
  const v = decodeEntities(value).trim();
  if (v.startsWith("#") || v.startsWith("mailto:") || v.startsWith("javascript:") || v.startsWith("data:"))
    return null;
  try {
    const u = new URL(v, base);
    return u.protocol === "http:" || u.protocol === "https:" ? u : null;
  } catch {
    return null;
  }
}

export async function snapshotSite(
  start: URL,
  budget: FetchBudget,
  options: { maxPages: number },
): Promise<Result<Artifact>> {
  const maxPages = Math.max(1, Math.min(options.maxPages, MAX_PAGES_LIMIT));
  const pages = new Map<string, Page>();
  const files = new Map<string, ArtifactFile>();
  const assetUrls = new Map<string, URL>();
  const seen = new Set<string>([keyOf(start)]);
  let queue: URL[] = [start];
  let total = 0;
  const notes: string[] = [];

  const first = await guardedFetch(start, budget, PAGE_MAX_BYTES);
  if (!first.ok) return first;
  if (first.value.status >= 400)
    return fail("bad_request", `url: ${start.href} answered ${first.value.status}`);
  if (!first.value.contentType.startsWith("text/html"))
    return fail(
      "bad_request",
      `url: ${start.href} is not an HTML page (${first.value.contentType || "no content type"})`,
    );
  // A redirect may have moved the start: the crawl's origin is where the first page really is.
  const origin = first.value.url;
  const firstPage: Page = {
    url: origin,
    file: "index.html",
    html: new TextDecoder().decode(first.value.bytes),
  };
  pages.set(keyOf(origin), firstPage);
  seen.add(keyOf(origin));
  total += first.value.bytes.byteLength;

  const discover = async (page: Page) => {
    const links = await linksOf(page);
    for (const u of links.assets)
      if (!assetUrls.has(keyOf(u)) && assetUrls.size < MAX_ASSETS) assetUrls.set(keyOf(u), u);
    const next: URL[] = [];
    for (const u of links.pages) {
      if (seen.has(keyOf(u))) continue;
      seen.add(keyOf(u));
      next.push(u);
    }
    return next;
  };

  queue = await discover(firstPage);
  while (queue.length > 0 && pages.size < maxPages && !budget.signal.aborted && total < TOTAL_MAX_BYTES) {
    const batch = queue.splice(0, Math.min(PARALLEL, maxPages - pages.size));
    const fetched = await Promise.all(batch.map((u) => guardedFetch(u, budget, PAGE_MAX_BYTES)));
    for (const [i, r] of fetched.entries()) {
      const u = batch[i];
      if (!u || !r.ok || r.value.status >= 400 || r.value.url.origin !== origin.origin) continue;
      total += r.value.bytes.byteLength;
      if (!r.value.contentType.startsWith("text/html")) {
        // a link to a file (a PDF, an image): kept as an asset at its path
        const file = fileOf(u, false);
        if (file) files.set(file, { path: file, bytes: r.value.bytes });
        continue;
      }
      const file = fileOf(u, true);
      if (!file || [...pages.values()].some((p) => p.file === file)) continue;
      const page: Page = { url: u, file, html: new TextDecoder().decode(r.value.bytes) };
      pages.set(keyOf(u), page);
      queue.push(...(await discover(page)));
    }
  }
  if (budget.signal.aborted)
    notes.push(
      `The ${budget.budgetMs / 1000} s budget ran out: the snapshot keeps what was fetched by then.`,
    );
  if (queue.length > 0 && pages.size >= maxPages)
    notes.push(`Stopped at ${maxPages} pages; links to the others point to the original site.`);

  const assetList = [...assetUrls.values()].filter((u) => !pages.has(keyOf(u)));
  for (let i = 0; i < assetList.length && !budget.signal.aborted && total < TOTAL_MAX_BYTES; i += PARALLEL) {
    const batch = assetList.slice(i, i + PARALLEL);
    const fetched = await Promise.all(batch.map((u) => guardedFetch(u, budget, ASSET_MAX_BYTES)));
    for (const [j, r] of fetched.entries()) {
      const u = batch[j];
      if (!u || !r.ok || r.value.status >= 400 || r.value.url.origin !== origin.origin) continue;
      const file = fileOf(u, false);
      if (!file) continue;
      total += r.value.bytes.byteLength;
      files.set(file, { path: file, bytes: r.value.bytes });
    }
  }

  // Pass 2: every page's links to saved pages and files become relative paths.
  const fileOfKey = new Map<string, string>();
  for (const [k, p] of pages) fileOfKey.set(k, p.file);
  for (const [, f] of files) fileOfKey.set(`/${f.path}`, f.path);
  for (const [k, u] of assetUrls) {
    const file = fileOf(u, false);
    if (file && files.has(file)) fileOfKey.set(k, file);
  }
  const out: ArtifactFile[] = [];
  for (const page of pages.values()) {
    out.push({ path: page.file, bytes: new TextEncoder().encode(await rewritePage(page, fileOfKey)) });
  }
  for (const f of files.values()) if (!out.some((o) => o.path === f.path)) out.push(f);

  const title = (await pageTitle(firstPage.html)) || origin.hostname;
  return ok({
    source: "site",
    source_url: origin.href,
    title,
    slug: slugOf(title),
    type: "multi",
    preset: "static",
    snapshot: true,
    files: out,
    transfer: {
      headline: `A static snapshot of ${origin.host}: ${pages.size} page(s), ${out.length - pages.size} asset(s)`,
      transfers: [
        {
          label: "pages",
          detail: `${pages.size} same-origin HTML page(s), links rewritten to relative paths`,
        },
        { label: "assets", detail: "same-origin images, stylesheets, scripts and media the pages use" },
      ],
      does_not_transfer: [
        {
          label: "server code",
          detail: "forms, searches and APIs that need the original server stop working",
        },
        { label: "other origins", detail: "assets and pages on other hosts stay links to them" },
        { label: "CSS references", detail: "url(…) inside stylesheets and style attributes is not followed" },
      ],
      notes,
    },
  });
}

/** A page with its same-origin links pointing at the saved files; `<base>` dropped. */
async function rewritePage(page: Page, fileOfKey: Map<string, string>): Promise<string> {
  let rewriter = new HTMLRewriter().on("base", {
    element(el) {
      el.remove();
    },
  });
  for (const [selector, attribute] of LINKS) {
    rewriter = rewriter.on(selector, {
      element(el) {
        const u = resolve(el.getAttribute(attribute), page.url);
        if (!u) return;
        const target = u.origin === page.url.origin ? fileOfKey.get(keyOf(u)) : undefined;
        if (target) el.setAttribute(attribute, `${relativePath(page.file, target)}${u.hash}`);
        else el.setAttribute(attribute, u.href);
      },
    });
  }
  rewriter = rewriter.on("[srcset]", {
    element(el) {
      const rewritten = srcsetUrls(el.getAttribute("srcset") ?? "").map((c) => {
        const u = resolve(c.url, page.url);
        if (!u) return `${c.url}${c.descriptor}`;
        const target = u.origin === page.url.origin ? fileOfKey.get(keyOf(u)) : undefined;
        return `${target ? relativePath(page.file, target) : u.href}${c.descriptor}`;
      });
      el.setAttribute("srcset", rewritten.join(", "));
    },
  });
  return rewriter.transform(new Response(page.html)).text();
}

/** most candidates read from one srcset */
const MAX_SRCSET_CANDIDATES = 32;

/**
 * `srcset="a.png 1x, b.png 2x"` as its candidates (URL and descriptor), split on commas and the
 * first whitespace by plain string scans.
 */
export function srcsetUrls(srcset: string): { url: string; descriptor: string }[] {
  const out: { url: string; descriptor: string }[] = [];
  for (const part of srcset.split(",").slice(0, MAX_SRCSET_CANDIDATES)) {
    const candidate = part.trim();
    if (!candidate) continue;
    let cut = candidate.length;
    for (let i = 0; i < candidate.length; i++)
      if (" \t\n\r\f".includes(candidate.charAt(i))) {
        cut = i;
        break;
      }
    out.push({ url: candidate.slice(0, cut), descriptor: candidate.slice(cut) });
  }
  return out;
}
