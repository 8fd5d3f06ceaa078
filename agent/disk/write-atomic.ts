import { rename, rm, writeFile } from "node:fs/promises";

/**
 * Replace the file at `path` with `text` by a rename: a reader sees the old file or the new one,
 * never part of one. A write cut by a full disk leaves what it wrote so far in the temp file, which
 * goes with the error: the agent's state dir keeps no half-written file (docs/reliability.md).
 */
export async function writeAtomic(path: string, text: string, mode?: number): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, text, mode === undefined ? undefined : { mode });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
