import type { BackupChecked } from "../../shared/protocol/backups";
import type { ServiceType } from "../../shared/protocol/services";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { BOX_LIMITS, boxName, boxOptions, startBox } from "./box";
import { type Expected, mismatch, streamChecked } from "./fetch";
import { checkListing, Listing, listingArgv } from "./listing";
import { whyItFailed } from "./pod-run";
import { loadDumpsInScratch } from "./scratch-load";
import type { BackupStore } from "./store";

/**
 * `backup.verify`, a test-restore that needs no pod: the archive read back through a throwaway box
 * (./box.ts) that lists every member and checks the SQLite dumps (./listing.ts), counted and
 * hashed on the way; only when the bytes are the recorded ones does anything it learned count.
 * Then every managed service's dump is loaded into a scratch server of its kind (./scratch-load.ts).
 */
export async function verifyBackup(
  deps: {
    docker: DockerClient;
    exec: StreamExecutor;
    store?: BackupStore;
    prefix: string;
    log: Logger;
    image: string;
    serviceImages: Record<ServiceType, string>;
  },
  expected: Expected,
  signal: AbortSignal,
): Promise<BackupChecked> {
  const { docker, log } = deps;
  const store = deps.store;
  if (!store) throw new AgentError("unavailable", "this agent has no connection to read backups");
  const timeout = AbortSignal.any([signal, AbortSignal.timeout(BOX_LIMITS.timeoutS * 1000)]);
  log.info("backup verify: starting the test-restore box", { backupId: expected.backupId });
  const remove = await startBox(docker, boxOptions(deps.prefix, expected.backupId, deps.image));
  try {
    const box = boxName(deps.prefix, expected.backupId);
    const read = await streamChecked(
      store,
      expected,
      (stdin) =>
        deps.exec(box, listingArgv(expected.bytes, "/tmp", BOX_LIMITS.scratchBytes - 16 * 1024 * 1024), {
          stdin,
          signal: timeout,
          workingDir: "/tmp",
        }),
      timeout,
    );
    if (!read.matches) return { ok: false, reason: mismatch(expected, read) };
    let listing: Listing;
    try {
      listing = Listing().parse(JSON.parse(read.run.stdout.trim().split("\n").at(-1) ?? ""));
    } catch {
      return {
        ok: false,
        reason: `the test-restore box ended without a listing (exit ${read.run.exitCode}): ${whyItFailed(read.run)}`,
      };
    }
    if (!listing.ok) return { ok: false, reason: listing.reason };
    const checked = checkListing(listing);
    if (!checked.ok) return checked;
    log.info("backup verify: listed", { backupId: expected.backupId, members: listing.members });
    const loaded = await loadDumpsInScratch(
      { ...deps, store },
      expected,
      checked.manifest.databases,
      timeout,
    );
    if (!loaded.ok) return loaded;
    return {
      ok: true,
      bytes: read.bytes,
      sha256: read.sha256,
      files: listing.files,
      databases: checked.manifest.databases,
    };
  } finally {
    await remove().catch((err: unknown) =>
      log.warn("backup verify: the box could not be removed", {
        backupId: expected.backupId,
        error: String(err),
      }),
    );
  }
}
