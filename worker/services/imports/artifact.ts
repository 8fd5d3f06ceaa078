import type { PresetSlug } from "../../../shared/catalog";

/**
 * An import artifact (spec "Import artifact"): what a URL or a paste became — the files a new pod
 * starts from, what kind of thing they are and which preset serves them — before any pod exists.
 */

export const ARTIFACT_TYPES = ["html", "react", "vue", "svg", "mermaid", "code", "multi"] as const;
export type ArtifactType = (typeof ARTIFACT_TYPES)[number];

export interface ArtifactFile {
  /** relative to the pod's app root, `/`-separated, no `..` */
  path: string;
  bytes: Uint8Array;
}

export interface TransferItem {
  label: string;
  detail: string;
}

/** What moves into the pod and what cannot (spec: headline, transfers, does_not_transfer, notes). */
export interface Transfer {
  headline: string;
  transfers: TransferItem[];
  does_not_transfer: TransferItem[];
  notes: string[];
}

export interface Artifact {
  /** `site`, `paste`, or an assistant's slug */
  source: string;
  source_url: string;
  title: string;
  slug: string;
  type: ArtifactType;
  preset: PresetSlug;
  files: ArtifactFile[];
  transfer: Transfer;
  /** a site snapshot's preview keeps only index.html's content */
  snapshot?: boolean;
}

/** Spec Limits: "Import preview content: 64 KB per file, 128 KB in total". */
export const PREVIEW_FILE_MAX_BYTES = 64 * 1024;
export const PREVIEW_TOTAL_MAX_BYTES = 128 * 1024;

export interface PreviewFile {
  path: string;
  size: number;
  content?: string;
  content_omitted?: true;
  /** why the content is left out: binary, over the per-file limit, the budget spent, a snapshot */
  omitted_reason?: string;
}

export interface ArtifactView {
  source: string;
  source_url: string;
  title: string;
  slug: string;
  type: ArtifactType;
  preset: PresetSlug;
  files: PreviewFile[];
  transfer: Transfer;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Text when the bytes are valid UTF-8 without NUL bytes; null for binary content. */
export function textOf(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * The artifact as a response shows it. With `preview` (dry_run) text content is included within the
 * spec's budgets, in the files' order; otherwise files carry only their path and size. Sizes are
 * always the exact byte counts of what the pod receives.
 */
export function viewArtifact(a: Artifact, preview: boolean): ArtifactView {
  let budget = PREVIEW_TOTAL_MAX_BYTES;
  const files = a.files.map((f): PreviewFile => {
    const entry: PreviewFile = { path: f.path, size: f.bytes.byteLength };
    if (!preview) return entry;
    const omit = (reason: string): PreviewFile => ({
      ...entry,
      content_omitted: true,
      omitted_reason: reason,
    });
    if (a.snapshot && f.path !== "index.html") return omit("site snapshot: only index.html is previewed");
    if (f.bytes.byteLength > PREVIEW_FILE_MAX_BYTES) return omit("over the 64 KB preview limit per file");
    const text = textOf(f.bytes);
    if (text === null) return omit("binary");
    if (f.bytes.byteLength > budget) return omit("past the 128 KB preview budget");
    budget -= f.bytes.byteLength;
    return { ...entry, content: text };
  });
  return {
    source: a.source,
    source_url: a.source_url,
    title: a.title,
    slug: a.slug,
    type: a.type,
    preset: a.preset,
    files,
    transfer: a.transfer,
  };
}

const encoder = new TextEncoder();
export const textFile = (path: string, text: string): ArtifactFile => ({ path, bytes: encoder.encode(text) });

/**
 * A slug from a title: lowercase letters, digits and single hyphens, at most 40 characters, starting
 * with a letter ("site" when the title gives too little). Walks the characters once: titles are the
 * tenant's text and never meet a regex.
 */
export function slugOf(title: string): string {
  let out = "";
  let dash = false;
  for (const ch of title.slice(0, 200).toLowerCase()) {
    const alnum = (ch >= "a" && ch <= "z") || (ch >= "0" && ch <= "9");
    if (alnum) {
      if (out.length === 0 && !(ch >= "a" && ch <= "z")) continue;
      if (dash && out.length > 0) out += "-";
      out += ch;
      dash = false;
    } else dash = true;
    if (out.length >= 40) break;
  }
  out = out.slice(0, 40);
  while (out.endsWith("-")) out = out.slice(0, -1);
  return out.length >= 3 ? out : out.length > 0 ? `${out}-site` : "site";
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}
