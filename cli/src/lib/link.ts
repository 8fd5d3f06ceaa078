import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { CliError, EXIT } from "./errors";

/**
 * `.podhost.json`: the pod a directory is linked to (`podhost link`), found in the current directory
 * or the nearest parent. Small, no secret in it; commit it or put it in .gitignore, either works.
 */
export const LINK_FILE = ".podhost.json";

export interface Link {
  pod: string;
  /** the directory holding the file */
  dir: string;
}

export async function findLink(from = process.cwd()): Promise<Link | undefined> {
  let dir = path.resolve(from);
  for (;;) {
    const file = path.join(dir, LINK_FILE);
    const text = await readFile(file, "utf8").catch(() => undefined);
    if (text !== undefined) {
      try {
        const parsed = JSON.parse(text) as { pod?: unknown };
        if (typeof parsed.pod === "string" && parsed.pod) return { pod: parsed.pod, dir };
      } catch {
        throw new CliError(`${file}: not valid JSON; run podhost link again`);
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export async function writeLink(dir: string, pod: string): Promise<string> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) throw new CliError(`${dir}: not a directory`, EXIT.usage);
  const file = path.join(dir, LINK_FILE);
  await writeFile(file, `${JSON.stringify({ pod }, null, 2)}\n`);
  return file;
}

/** The pod a command acts on: the one named, else the linked one, else a usage error. */
export async function podName(given: string | undefined): Promise<string> {
  if (given) return given;
  const link = await findLink();
  if (link) return link.pod;
  throw new CliError(
    "which pod? name it (--pod NAME or the argument), or run podhost link NAME here",
    EXIT.usage,
  );
}
