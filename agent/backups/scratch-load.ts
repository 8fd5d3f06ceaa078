import type { DumpEntry } from "../../shared/protocol/backups";
import type { ServiceType } from "../../shared/protocol/services";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import type { Logger } from "../logger";
import { BOX_LIMITS, boxName, boxOptions, startBox } from "./box";
import { type Expected, mismatch, streamChecked } from "./fetch";
import { whyItFailed } from "./pod-run";
import { SVC_VERIFY } from "./services";
import type { BackupStore } from "./store";

/**
 * The database half of a test-restore: every managed service's dump is loaded into a scratch
 * server of its kind, in a throwaway box made from that service's image (no network, read-only
 * root, the server's data in the box's tmpfs). The archive is read back once more for each dump
 * and checked again on the way, the box's own `tar` picks the one member out, and the image's
 * `svc-verify` loads it and says whether everything loaded. A dump that does not load makes the
 * backup one that cannot be restored.
 */

/** the scratch space: the dump, the server's files for it, and room (tmpfs: counted as memory) */
const scratchFor = (dumpBytes: number) =>
  Math.min(MAX_SCRATCH_BYTES, Math.max(BOX_LIMITS.scratchBytes, dumpBytes * 3 + 256 * 1024 * 1024));
/** a dump whose scratch server would need more than this is not loaded (the check says so) */
export const MAX_SCRATCH_BYTES = 4 * 1024 ** 3;

export async function loadDumpsInScratch(
  deps: {
    docker: DockerClient;
    exec: StreamExecutor;
    store: BackupStore;
    prefix: string;
    log: Logger;
    serviceImages: Record<ServiceType, string>;
  },
  expected: Expected,
  dumps: DumpEntry[],
  signal: AbortSignal,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  for (const dump of dumps) {
    if (dump.kind === "sqlite") continue; // checked by the listing pass (PRAGMA quick_check)
    if (dump.bytes * 3 > MAX_SCRATCH_BYTES)
      return {
        ok: false,
        reason: `the ${dump.kind} dump (${dump.bytes} bytes) is larger than a test-restore can load`,
      };
    const id = `${expected.backupId}-${dump.kind}`;
    const remove = await startBox(
      deps.docker,
      boxOptions(deps.prefix, id, deps.serviceImages[dump.kind], {
        scratchBytes: scratchFor(dump.bytes),
        runSvc: true,
      }),
    );
    try {
      deps.log.info("backup verify: loading a dump into a scratch server", { id, bytes: dump.bytes });
      const read = await streamChecked(
        deps.store,
        expected,
        (stdin) =>
          deps.exec(
            boxName(deps.prefix, id),
            [
              "/bin/bash",
              "-c",
              '/usr/bin/head -c "$1" | /bin/tar -xzOf - -- "$2" | "$3"',
              "bash",
              String(expected.bytes),
              dump.file,
              SVC_VERIFY,
            ],
            { stdin, signal, workingDir: "/tmp" },
          ),
        signal,
      );
      if (!read.matches) return { ok: false, reason: mismatch(expected, read) };
      if (read.run.exitCode !== 0)
        return {
          ok: false,
          reason: `the ${dump.kind} dump ${dump.file} does not load into a scratch server (exit ${read.run.exitCode}): ${whyItFailed(read.run)}`,
        };
      deps.log.info("backup verify: dump loaded", { id, answer: read.run.stdout.trim().slice(0, 200) });
    } finally {
      await remove().catch((err: unknown) =>
        deps.log.warn("backup verify: a scratch box could not be removed", { id, error: String(err) }),
      );
    }
  }
  return { ok: true };
}
