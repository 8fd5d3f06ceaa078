import { lstat, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { type Zippable, zipSync } from "fflate";
import ignore, { type Ignore } from "ignore";
import { CliError, EXIT } from "./errors";

/**
 * The directory as a ZIP archive for the ZIP APIs (docs/zip.md): its files at the archive's top level,
 * without what `.gitignore` files (each applying to its own directory and below, as git reads them)
 * and a `.podhostignore` at the top exclude. `.git/`, `.podhost.json` and `.podhostignore` are never packed; symbolic
 * links are skipped (the API refuses them). Already-compressed files are stored, others deflated.
 */

const ALWAYS_SKIPPED = [".git/", ".podhost.json", ".podhostignore"];
const STORED = /\.(png|jpe?g|gif|webp|avif|ico|woff2?|gz|zip|br|mp4|webm|mp3|pdf)$/i;

interface Level {
  /** relative to the packed root, "" or ending in "/" */
  base: string;
  rules: Ignore;
}

export interface Packed {
  zip: Uint8Array;
  files: number;
  bytes: number;
  skippedLinks: string[];
}

async function rulesOf(file: string): Promise<Ignore | undefined> {
  const text = await readFile(file, "utf8").catch(() => undefined);
  return text === undefined ? undefined : ignore().add(text);
}

export async function packDirectory(root: string): Promise<Packed> {
  const top = ignore().add(ALWAYS_SKIPPED);
  const podhostIgnore = await rulesOf(path.join(root, ".podhostignore"));
  const entries: Zippable = {};
  const skippedLinks: string[] = [];
  let files = 0;
  let bytes = 0;

  const ignored = (rel: string, isDir: boolean, levels: Level[]) => {
    const name = isDir ? `${rel}/` : rel;
    if (top.ignores(name) || podhostIgnore?.ignores(name)) return true;
    return levels.some((l) => name.startsWith(l.base) && l.rules.ignores(name.slice(l.base.length)));
  };

  const walk = async (rel: string, levels: Level[]) => {
    const dir = path.join(root, rel);
    const here = await rulesOf(path.join(dir, ".gitignore"));
    const scope = here ? [...levels, { base: rel ? `${rel}/` : "", rules: here }] : levels;
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const childRel = rel ? `${rel}/${name}` : name;
      const info = await lstat(path.join(root, childRel));
      if (info.isSymbolicLink()) {
        if (!ignored(childRel, false, scope)) skippedLinks.push(childRel);
        continue;
      }
      if (info.isDirectory()) {
        if (!ignored(childRel, true, scope)) await walk(childRel, scope);
        continue;
      }
      if (!info.isFile() || ignored(childRel, false, scope)) continue;
      const data = await readFile(path.join(root, childRel));
      entries[childRel] = [
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        { level: STORED.test(name) ? 0 : 6, mtime: info.mtime },
      ];
      files += 1;
      bytes += data.byteLength;
    }
  };

  const info = await lstat(root).catch(() => undefined);
  if (!info?.isDirectory()) throw new CliError(`${root}: not a directory`, EXIT.usage);
  await walk("", []);
  if (files === 0)
    throw new CliError(`${root}: nothing to deploy (every file is ignored, or it is empty)`, EXIT.usage);
  return { zip: zipSync(entries), files, bytes, skippedLinks };
}
