import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import type { Artifact, ArtifactType } from "./artifact";
import { slugOf, textOf } from "./artifact";
import { findAssistant, findPlatform, guideOf } from "./catalog";
import { checkTarget, guardedFetch, newBudget } from "./fetch";
import { pageCode, pageTitle } from "./page-read";
import { defaultTitle, pasteProject } from "./paste";
import { snapshotSite } from "./snapshot";

export interface UrlImportOptions {
  mode?: "site" | "artifact";
  max_pages?: number;
  single_page?: boolean;
}

/** Spec Limits: "Import fetch budget: 25 seconds; 75 seconds for a site snapshot". */
export const FETCH_BUDGET_MS = 25_000;
export const SNAPSHOT_BUDGET_MS = 75_000;
/** pages crawled when a snapshot names no max_pages (a detected site: 25 s budget) */
export const DEFAULT_MAX_PAGES = 10;
/** an artifact page or a single file */
const ARTIFACT_MAX_BYTES = 5 * 1024 * 1024;

/**
 * A URL as an artifact: a platform whose code cannot be fetched is a 422 with its guide (unless
 * `mode: "site"` asks for a static snapshot of it anyway); an AI assistant's shared artifact (or any
 * page with `mode: "artifact"`) has its source extracted and built like a paste; anything else is a
 * site snapshot.
 */
export async function urlArtifact(
  ctx: ServiceContext,
  raw: string,
  options: UrlImportOptions,
): Promise<Result<Artifact>> {
  const allowLoopback = ctx.env.ALLOW_IMPORT_LOOPBACK === "true";
  const target = checkTarget(raw, allowLoopback);
  if (!target.ok) return target;
  const url = target.value;
  const explicitSite =
    options.mode === "site" || options.max_pages !== undefined || options.single_page === true;
  if (!explicitSite) {
    const platform = findPlatform(url);
    if (platform)
      return fail("unprocessable", `${platform.name} does not let its code be fetched: ${platform.summary}`, {
        guide: guideOf(platform),
      });
  }
  const assistant = findAssistant(url);
  if (!explicitSite && (options.mode === "artifact" || assistant))
    return artifactFromPage(ctx, url, assistant?.slug ?? "artifact");
  return snapshotSite(url, newBudget(ctx.env, explicitSite ? SNAPSHOT_BUDGET_MS : FETCH_BUDGET_MS), {
    maxPages: options.single_page ? 1 : (options.max_pages ?? DEFAULT_MAX_PAGES),
  });
}

/** Which artifact type a `language-…` class names (a Map: a page's `language-constructor` is none). */
const LANGUAGE_TYPES = new Map<string, ArtifactType>([
  ["jsx", "react"],
  ["tsx", "react"],
  ["react", "react"],
  ["vue", "vue"],
  ["svg", "svg"],
  ["mermaid", "mermaid"],
  ["html", "html"],
]);
const typeOfLanguage = (lang: string): ArtifactType | undefined => LANGUAGE_TYPES.get(lang);

const typeOfMedia = (contentType: string): ArtifactType | undefined => {
  if (contentType.startsWith("image/svg+xml")) return "svg";
  if (contentType.startsWith("text/html")) return "html";
  if (contentType.startsWith("text/vnd.mermaid") || contentType.startsWith("text/x-mermaid"))
    return "mermaid";
  return undefined;
};

/**
 * A shared artifact's page: the artifact's source is the page's first `<pre><code class="language-…">`
 * block (how assistants' share pages show code), else, for a raw file, the response itself, else the
 * page as HTML. The source is then built like a paste of that type.
 */
async function artifactFromPage(ctx: ServiceContext, url: URL, source: string): Promise<Result<Artifact>> {
  const fetched = await guardedFetch(url, newBudget(ctx.env, FETCH_BUDGET_MS), ARTIFACT_MAX_BYTES);
  if (!fetched.ok) return fetched;
  const f = fetched.value;
  if (f.status >= 400) return fail("bad_request", `url: ${f.url.href} answered ${f.status}`);
  const text = textOf(f.bytes);
  if (text === null) return fail("bad_request", `url: ${f.url.href} is not a text page`);
  let body = text;
  let type = typeOfMedia(f.contentType);
  let language: string | undefined;
  let title = "";
  if (type === "html") {
    title = await pageTitle(text);
    const code = await pageCode(text);
    if (code) {
      body = code.text;
      language = code.language;
      type = (code.language ? typeOfLanguage(code.language) : undefined) ?? undefined;
    }
  }
  title = title || defaultTitle(type ?? "code");
  const project = await pasteProject({ body, type, language }, title);
  if (!project.ok) return project;
  return ok({ source, source_url: url.href, title, slug: slugOf(title), ...project.value });
}
