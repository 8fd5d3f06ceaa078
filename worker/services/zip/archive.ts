import type { PresetSlug } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { START_FILES, type StartFileRuntime } from "../../../shared/start-files";
import type { ZipManifest } from "../../../shared/zip/policy";
import type { Bindings } from "../../env";
import type { StagedZip } from "./form";
import { inspectStagedZip } from "./staged-archive";

/**
 * An uploaded ZIP as the Worker judges it, before any pod is created or touched: its table of
 * contents checked by shared/zip (zip-slip, absolute paths, links, encryption, bombs …), the
 * spec's top-level rule (`package.json` or `index.html`), and the preset it is written for.
 */

export interface ZipUpload {
  staged: StagedZip;
  /** the part's file name, for events and a generated pod name */
  filename: string;
  manifest: ZipManifest;
  /** what the contract's detection makes of the archive */
  detected: PresetSlug;
}

const ENTRY_POINTS = ["package.json", "index.html"];

/** The files that mark an archive as written for a runtime, in the contract's order of detection. */
const MARKERS: [PresetSlug, string[]][] = [
  ["nodejs", ["package.json"]],
  ["python", ["requirements.txt"]],
  ["php", ["composer.json", "index.php"]],
];

/** Contract: `package.json` nodejs, `requirements.txt` python, `composer.json` or `index.php` php, else static. */
export function detectPreset(topFiles: readonly string[]): PresetSlug {
  return MARKERS.find(([, files]) => files.some((f) => topFiles.includes(f)))?.[0] ?? "static";
}

function entryPointProblem(m: ZipManifest): string | null {
  const { files, dirs } = m.topLevel;
  if (ENTRY_POINTS.some((f) => files.includes(f))) return null;
  const need = "the archive's top level must hold package.json or index.html";
  if (files.length === 0 && dirs.length === 0) return `zip: the archive is empty; ${need}`;
  if (files.length === 0 && dirs.length === 1) {
    return `zip: ${need}, but it holds only the folder "${dirs[0]}/"; zip that folder's contents instead of the folder`;
  }
  const listed = [...files, ...dirs.map((d) => `${d}/`)];
  const shown = listed.slice(0, 10).join(", ") + (listed.length > 10 ? ", …" : "");
  return `zip: ${need}; it holds ${shown}`;
}

/**
 * Whether the archive can run as `preset`: it carries that runtime's marker, or it carries none
 * (a static site) and the preset serves files (static, php) or the image finds its start file.
 * The reason it cannot, for the caller to phrase, otherwise.
 */
export function runtimeMismatch(preset: PresetSlug, upload: ZipUpload): string | null {
  const top = upload.manifest.topLevel.files;
  const marker = MARKERS.find(([p]) => p === preset)?.[1];
  if (marker?.some((f) => top.includes(f))) return null;
  if (upload.detected !== "static") {
    const found = MARKERS.find(([p]) => p === upload.detected)?.[1].find((f) => top.includes(f));
    return `the archive is a ${upload.detected} app (it has ${found}), not ${preset}`;
  }
  if (preset === "static" || preset === "php") return null;
  const starts: readonly string[] = preset in START_FILES ? START_FILES[preset as StartFileRuntime] : [];
  if (starts.some((f) => top.includes(f))) return null;
  return `the archive is a static site (no ${[...(marker ?? []), ...starts].join(", ")} at its top level), not a ${preset} app`;
}

/** The staged upload checked: 400 `{error}` naming the first problem. */
export async function readZipUpload(env: Bindings, staged: StagedZip): Promise<Result<ZipUpload>> {
  const manifest = await inspectStagedZip(env.BLOBS, staged.key, staged.size);
  if (!manifest.ok) return manifest;
  const problem = entryPointProblem(manifest.value);
  if (problem) return fail("bad_request", problem);
  return ok({
    staged,
    filename: staged.filename,
    manifest: manifest.value,
    detected: detectPreset(manifest.value.topLevel.files),
  });
}
