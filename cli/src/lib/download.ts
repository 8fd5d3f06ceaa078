import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { progressBar } from "./upload";

/** Writes a download to `file` (a temporary name, renamed when complete) with a progress bar on stderr. */
export async function saveDownload(
  res: Response,
  file: string,
  label: string,
  showProgress: boolean,
): Promise<number> {
  const total = Number(res.headers.get("content-length") ?? 0);
  const bar = progressBar(label, showProgress && total > 0);
  const tmp = `${file}.podhost-partial`;
  const out = createWriteStream(tmp, { mode: 0o600 });
  let done = 0;
  try {
    for await (const chunk of res.body ?? []) {
      const bytes = chunk as Uint8Array;
      done += bytes.byteLength;
      if (!out.write(bytes)) await new Promise<void>((r) => out.once("drain", () => r()));
      bar.update(done, total);
    }
    await new Promise<void>((resolve, reject) =>
      out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
    await rename(tmp, file);
    return done;
  } catch (error) {
    out.destroy();
    await rm(tmp, { force: true });
    throw error;
  } finally {
    bar.done();
  }
}
