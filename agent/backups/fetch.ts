import { PassThrough } from "node:stream";
import type { StreamedExec } from "../docker/exec-stream";
import type { BackupStore } from "./store";
import { pumpAll, Tally } from "./tally";

/** What the control plane's record says the archive is. */
export interface Expected {
  backupId: string;
  bytes: number;
  sha256: string;
}

/**
 * Read the archive back into a process (`start` gets its stdin), counting and hashing every byte,
 * also those the process did not read (it may stop early on a refused archive). The result tells
 * whether the bytes are the ones recorded: nothing the process learned counts otherwise.
 */
export async function streamChecked(
  store: BackupStore,
  expected: Expected,
  start: (stdin: PassThrough) => Promise<StreamedExec>,
  signal: AbortSignal,
): Promise<{
  matches: boolean;
  bytes: number;
  sha256: string;
  run: { exitCode: number; stderr: string; stdout: string };
}> {
  const { body } = await store.read(expected.backupId, signal);
  const tally = new Tally();
  const feed = new PassThrough();
  let run: StreamedExec;
  try {
    run = await start(feed);
  } catch (err) {
    body.destroy();
    throw err;
  }
  const out: Buffer[] = [];
  let kept = 0;
  run.stdout.on("data", (b: Buffer) => {
    // the process's answer is one JSON line or a word: 1 MiB is plenty, the rest is dropped
    if (kept < 1024 * 1024) {
      out.push(Buffer.from(b.subarray(0, 1024 * 1024 - kept)));
      kept += b.length;
    }
  });
  run.stdout.on("error", () => undefined);
  body.on("error", (err) => tally.destroy(err));
  body.pipe(tally);
  try {
    await pumpAll(tally, feed, run.done);
  } catch (err) {
    run.abort();
    throw err;
  }
  const done = await run.done;
  const sha256 = tally.sha256 ?? "";
  return {
    matches: tally.bytes === expected.bytes && sha256 === expected.sha256,
    bytes: tally.bytes,
    sha256,
    run: { ...done, stdout: Buffer.concat(out).toString("utf8") },
  };
}

export const mismatch = (e: Expected, got: { bytes: number; sha256: string }) =>
  `checksum mismatch: the archive read back is ${got.bytes} bytes with sha256 ${got.sha256}, the record says ${e.bytes} bytes with sha256 ${e.sha256}`;
