import {
  findAssistant,
  findPlatform,
  type Guide,
  guideOf,
  IMPORT_ROUTES,
  type ImportRoute,
  PLATFORMS,
} from "./catalog";

export interface SourcesView {
  routes: ImportRoute[];
  platforms: (Guide & { host_examples: string[] })[];
  detected_source?: string;
  guide?: Guide;
}

/**
 * `GET /api/imports/sources`: the catalog, and with a URL what it is — an AI assistant's artifact
 * (its name), a guided platform (`site`, with the guide: its code cannot be fetched, its pages can be
 * snapshotted), any other web page (`site`), or `unknown` for what is not an http(s) URL.
 */
export function importSources(rawUrl: string | undefined): SourcesView {
  const view: SourcesView = {
    routes: IMPORT_ROUTES,
    platforms: PLATFORMS.map((p) => ({ ...guideOf(p), host_examples: p.host_examples })),
  };
  if (rawUrl === undefined) return view;
  let url: URL | undefined;
  try {
    url = new URL(rawUrl);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
    return { ...view, detected_source: "unknown" };
  const assistant = findAssistant(url);
  if (assistant) return { ...view, detected_source: assistant.slug };
  const platform = findPlatform(url);
  return platform
    ? { ...view, detected_source: "site", guide: guideOf(platform) }
    : { ...view, detected_source: "site" };
}
