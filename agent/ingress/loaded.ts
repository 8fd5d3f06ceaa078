import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeAtomic } from "../disk/write-atomic";

/**
 * What our nginx master has loaded, so an agent's start can skip `nginx -t` and the reload when the
 * master already serves the files as they are: with 50 pods the test parses every vhost (a process of
 * its own, ~30–100 ms on a busy host) before the host takes pods, for a master that would then
 * reload the same config. The record (`<nginx dir>/loaded.json`) is the master's pid and a hash of
 * nginx.conf and every vhost file, written only once a load is known to have taken effect (a master
 * started on the files, or a reload whose new workers are up): any change of a file since, a reload
 * not confirmed, or another master makes the start test and reload as before.
 */
export interface Loaded {
  pid: number;
  sha256: string;
}

const recordPath = (dir: string) => join(dir, "loaded.json");

/** The hash of the config nginx would load now: nginx.conf and the vhost files, by name. */
export async function configHash(dir: string, confPath: string): Promise<string> {
  const hash = createHash("sha256");
  hash.update(await readFile(confPath));
  const vhosts = join(dir, "vhosts");
  const names = (await readdir(vhosts).catch(() => [] as string[])).filter((n) => n.endsWith(".conf")).sort();
  for (const [name, text] of await Promise.all(
    names.map(async (n) => [n, await readFile(join(vhosts, n)).catch(() => Buffer.alloc(0))] as const),
  )) {
    hash.update(`\0${name}\0${text.length}\0`);
    hash.update(text);
  }
  return hash.digest("hex");
}

/** Whether master `pid` last loaded exactly these files (its record says so, and they hash alike). */
export async function alreadyLoaded(dir: string, confPath: string, pid: number): Promise<boolean> {
  const raw = await readFile(recordPath(dir), "utf8").catch(() => "");
  let record: Partial<Loaded> = {};
  try {
    record = JSON.parse(raw) as Partial<Loaded>;
  } catch {
    return false;
  }
  return record.pid === pid && record.sha256 === (await configHash(dir, confPath));
}

/** Master `pid` serves the files that hashed to `sha256` (its load took effect). */
export function recordLoaded(dir: string, loaded: Loaded): Promise<void> {
  return writeAtomic(recordPath(dir), JSON.stringify(loaded));
}
