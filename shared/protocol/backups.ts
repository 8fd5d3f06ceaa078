import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Backups (docs/backups.md). The Worker owns the records, the schedule and the R2 objects; a host
 * makes, restores and test-restores archives. Bytes never cross the control WebSocket and are never
 * held whole anywhere: the agent streams an archive as it is made with `PUT /agent/backups/{id}`
 * (host token; the Worker pipes it into an R2 multipart upload, counting and hashing as it goes,
 * and answers `{bytes, sha256}`), and reads one back with `GET /agent/backups/{id}`. A host reaches
 * only the backups of pods it holds.
 *
 * The archive (`.tar.gz`, what download hands out and import takes):
 *   podhost-backup.json      BackupManifest, the first member
 *   databases/<file>         every database found, dumped before the files were read
 *   app/…                    the pod's ~/app, without the preset's dependency directories
 *
 * The agent finds databases itself: the pod's managed service sidecars (dumped inside the sidecar
 * with the image's own `svc-dump`; no password crosses the wire) and SQLite files under ~/app.
 *
 * Spread into `ops` in ./ops.ts like ./git.ts.
 */

const Preset = lazy(() => z.enum(["static", "php", "nodejs", "python"]));
const BackupId = lazy(() => z.string().regex(/^bk_[A-Za-z0-9]{8,40}$/));
const Sha256 = lazy(() => z.string().regex(/^[0-9a-f]{64}$/));

/** directories of ~/app a backup leaves out (and a restore therefore cannot bring back): reload after restoring */
export const EXCLUDED_DIRS: Record<Built<typeof Preset>, string[]> = {
  static: [],
  php: [],
  nodejs: ["node_modules", ".next", "dist"],
  python: ["venv", ".venv", "__pycache__"],
};

/** One database in an archive. */
export const DumpEntry = lazy(() =>
  z.object({
    /** `postgresql`, `mysql`, `redis` for a managed service; `sqlite` for a file under ~/app */
    kind: z.enum(["postgresql", "mysql", "redis", "sqlite"]),
    /** its member in the archive, under `databases/` */
    file: z.string().min(1).max(1024),
    bytes: z.number().int().nonnegative(),
    /**
     * for sqlite: the database file's path under ~/app; for a self-run server: its data directory
     * under ~/app, left out of app/ and kept in place by a restore
     */
    source: z.string().max(1024).optional(),
    /** a server the app runs itself (agent/backups/self-run.ts), on 127.0.0.1:<port>; none: managed */
    port: z.number().int().min(1).max(65535).optional(),
  }),
);
export type DumpEntry = Built<typeof DumpEntry>;

/** `podhost-backup.json`: what an archive holds, written by the host that made it. */
export const BackupManifest = lazy(() =>
  z.object({
    format: z.literal(1),
    pod: z.string(),
    preset: Preset(),
    created_at: z.string(),
    databases: z.array(DumpEntry()).max(100),
    excluded: z.array(z.string()).max(20),
  }),
);
export type BackupManifest = Built<typeof BackupManifest>;

/** What a finished archive is: its byte count and hash as the agent sent them, and what it holds. */
const ArchiveFacts = lazy(() =>
  z.object({
    bytes: z.number().int().positive(),
    sha256: Sha256(),
    /** entries under app/ (files, directories, links) */
    files: z.number().int().nonnegative(),
    databases: z.array(DumpEntry()),
  }),
);

/** A failure's one line (no secret, no tenant bytes beyond names), for the record and the API. */
const Failure = lazy(() => z.object({ ok: z.literal(false), reason: z.string().max(2000) }));

export const BackupMade = lazy(() =>
  z.discriminatedUnion("ok", [ArchiveFacts().extend({ ok: z.literal(true) }), Failure()]),
);
export type BackupMade = Built<typeof BackupMade>;

export const BackupChecked = lazy(() =>
  z.discriminatedUnion("ok", [ArchiveFacts().extend({ ok: z.literal(true) }), Failure()]),
);
export type BackupChecked = Built<typeof BackupChecked>;

export const RestoreOutcome = lazy(() =>
  z.discriminatedUnion("ok", [
    z.object({
      ok: z.literal(true),
      databases: z.array(DumpEntry()),
      /** the preset's dependency directories that are now absent: reload the pod */
      dependencies_dropped: z.array(z.string()),
    }),
    Failure().extend({
      /** a dump that could not be re-imported, left inside the pod (its path there), else null */
      dump_path: z.string().max(1024).nullable(),
      /** whether the pod's files were already replaced when it failed */
      files_restored: z.boolean(),
    }),
  ]),
);
export type RestoreOutcome = Built<typeof RestoreOutcome>;

/** What the archive must be before anything is touched: the Worker's record of it. */
const Expected = lazy(() =>
  z.object({ backupId: BackupId(), bytes: z.number().int().positive(), sha256: Sha256() }),
);

export const backupOps = {
  /**
   * Dump every database found, then stream the archive to `PUT /agent/backups/{backupId}` while it
   * is made. Fails (ok: false) when it captures nothing, a dump is empty, or ~/app is missing; the
   * same backupId again (a retried step) makes and sends the archive again, replacing the upload.
   * A stopped pod: `whenStopped` `helper` (a manual backup) makes it in helper containers made like
   * the pod, leaving it stopped; `refuse` or absent (a scheduled one: stopped pods are skipped)
   * fails with "pod is not running".
   */
  "backup.create": () => ({
    params: z.object({
      name: PodName,
      backupId: BackupId(),
      preset: Preset(),
      whenStopped: z.enum(["refuse", "helper"]).optional(),
    }),
    result: BackupMade(),
  }),
  /**
   * Test-restore in a throwaway container with no network: the archive read back, its bytes and
   * hash checked against the record, every member listed, every dump loaded into a scratch server
   * of its kind. Needs no pod (an imported archive is checked this way before it counts).
   */
  "backup.verify": () => ({
    params: Expected(),
    result: BackupChecked(),
  }),
  /**
   * Restore into the pod: the archive read back and checked (bytes, hash) before anything is
   * touched, the app's services stopped, ~/app replaced by the archive's app/, every dump
   * re-imported into the pod's running service of its kind, the services started again. A stopped
   * pod is restored in helper containers made like it (each database served by a helper for its
   * load) and left stopped.
   */
  "backup.restore": () => ({
    params: Expected().extend({ name: PodName, preset: Preset() }),
    result: RestoreOutcome(),
  }),
};
