import {
  type BackupMade,
  type BackupManifest,
  type DumpEntry,
  EXCLUDED_DIRS,
} from "../../shared/protocol/backups";
import { namingFullDisk } from "../disk/full";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { BASH, TIMEOUT } from "../docker/pod-bin";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { runScript, tail, whyItFailed } from "./pod-run";
import { findSelfRunServers } from "./self-run";
import { type SelfRunDeps, selfRunEntry, selfRunLogin, withSelfRunBox } from "./self-run-db";
import { dumpServices, pipeDump } from "./services";
import { parseSqliteCopies, SQLITE_LIMITS, sqliteArgv } from "./sqlite";
import type { BackupStore } from "./store";
import { Tally } from "./tally";
import { openWorkspace, type WhenStopped, type WorkspaceDeps } from "./workspace";

/**
 * `backup.create` (docs/backups.md "On the host"): databases dumped first into a spool in the pod's
 * own home (`~/.pod/backup/<id>/`, so it counts against the pod's disk, never the host's), then one
 * `tar | gzip -1` run as pod_user streams `podhost-backup.json`, `databases/…` and `app/…` straight
 * into `PUT /agent/backups/{id}`, counted and hashed on the way. The spool goes afterwards, whatever
 * happened. A retry with the same id makes everything again. In the pod when it runs; for a stopped
 * pod (a manual backup) in helper containers made like it (./workspace.ts), the pod left stopped.
 */

export interface BackupDeps extends WorkspaceDeps, SelfRunDeps {
  docker: DockerClient;
  exec: StreamExecutor;
  store?: BackupStore;
  prefix: string;
  log: Logger;
}

/** making and sending one archive, at most (a 2 GB archive at tens of MB/s, with room) */
export const ARCHIVE_TIMEOUT_S = 3600;

export const spoolOf = (backupId: string) => `${HOME}/.pod/backup/${backupId}`;

// $1 the spool, then the preset's excluded names. Prints `missing`, `empty` or `ready`.
const PREPARE = `set -u
s=$1; shift
rm -rf "$s" "$s.idx"
[ -d "${HOME}/app" ] || { echo missing; exit 0; }
mkdir -p "$s/databases" || exit 70
for e in "${HOME}"/app/* "${HOME}"/app/.[!.]* "${HOME}"/app/..?*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  n=\${e##*/}; skip=
  for x in "$@"; do [ "$n" = "$x" ] && skip=1; done
  [ -z "$skip" ] && { echo ready; exit 0; }
done
echo empty`;

const WRITE = `set -u
/usr/bin/head -c "$2" > "$1"`;

// $1 the spool, $2 the index file, then the excluded paths (the preset's names, self-run servers'
// data directories), matched literally. The archive on stdout. ~/app is
// entered with cd, so a symlinked ~/app (a git release) is archived by its contents; links inside
// are archived as links (no -h). `tar` exit 1 (a file changed while read: a live app) is kept.
const ARCHIVE = `set -u
s=$1; idx=$2; shift 2
ex=(--no-wildcards)
for e in "$@"; do ex+=("--exclude=./$e"); done
cd "${HOME}/app" || { echo "expected directory missing: ~/app" >&2; exit 71; }
/bin/tar --create --file=- --verbose --index-file="$idx" --warning=no-file-changed \\
  --transform='s,^\\.,app,S' "\${ex[@]}" -C "$s" podhost-backup.json databases -C "${HOME}/app" . \\
  | /bin/gzip -1 -n
r=("\${PIPESTATUS[@]}")
[ "\${r[0]}" -le 1 ] || exit 72
[ "\${r[1]}" -eq 0 ] || exit 73
exit 0`;

// the index lists names as read ("./…" for the entries of ~/app), before --transform
const COUNT = `set -u
/bin/grep -c '^\\./' "$1" || true`;

const CLEAN = `rm -rf "$1" "$1.idx"`;

type Made = BackupMade;
// a full disk (the spool is in the pod's home) is named first: "the pod's disk is full …: mkdir: …"
const failed = (reason: string): Made => ({ ok: false, reason: namingFullDisk(reason).slice(0, 2000) });

export async function createBackup(
  deps: BackupDeps,
  params: {
    name: string;
    backupId: string;
    preset: keyof typeof EXCLUDED_DIRS;
    whenStopped?: WhenStopped;
  },
  signal: AbortSignal,
): Promise<Made> {
  const { docker, log } = deps;
  const { name, backupId, preset } = params;
  const store = deps.store;
  if (!store) throw new AgentError("unavailable", "this agent has no connection to store backups");
  const opened = await openWorkspace(deps, name, {
    whenStopped: params.whenStopped ?? "refuse",
    job: "backed up",
    signal,
  });
  if (!opened.ok) return failed(opened.reason);
  const ws = opened.workspace;
  const container = ws.container;

  const spool = spoolOf(backupId);
  const excluded = EXCLUDED_DIRS[preset];
  const short = { timeoutS: 60, signal };
  try {
    log.info("backup: preparing", { pod: name, backupId });
    const prep = await runScript(docker, container, PREPARE, [spool, ...excluded], short);
    const state = prep.stdout.trim();
    if (prep.exitCode !== 0 || !["missing", "empty", "ready"].includes(state))
      return failed(`preparing the backup failed (exit ${prep.exitCode}): ${whyItFailed(prep)}`);
    if (state === "missing") return failed("expected directory missing: ~/app");

    // 1. databases, before any file is read
    const databases: DumpEntry[] = [];
    for (const kind of ws.services) {
      log.info("backup: dumping service", { pod: name, backupId, kind });
      const service = await ws.serverOf(kind);
      if (!service.ok) return failed(service.reason);
      const dumped = await dumpServices(
        deps,
        container,
        service.sidecar,
        `${spool}/databases`,
        signal,
      ).finally(service.release);
      if (!dumped.ok) return failed(dumped.reason);
      databases.push(dumped.entry);
    }
    // a running pod's own servers (a stopped pod's are not running: their files are at rest)
    const keptOut: string[] = [];
    for (const server of ws.stopped ? [] : await findSelfRunServers(docker, container)) {
      log.info("backup: dumping a self-run database", { pod: name, backupId, ...server });
      const login = await selfRunLogin(docker, deps.prefix, name, server);
      if (!login.ok) return failed(login.reason);
      const dumped = await withSelfRunBox(deps, container, backupId, server, login.login, ({ dump }) =>
        pipeDump(deps, container, dump, `${spool}/databases`, signal),
      );
      if (!dumped.ok) return failed(dumped.reason);
      databases.push(selfRunEntry(server, dumped.bytes));
      if (server.datadir) keptOut.push(server.datadir);
    }
    log.info("backup: looking for sqlite databases", { pod: name, backupId });
    const lite = await execInContainer(
      docker,
      container,
      sqliteArgv(`${HOME}/app`, `${spool}/databases`, excluded),
      {
        workingDir: HOME,
        maxOutputBytes: 256 * 1024,
        signal: AbortSignal.any([signal, AbortSignal.timeout((SQLITE_LIMITS.timeoutS + 30) * 1000)]),
      },
    );
    if (lite.exitCode !== 0)
      return failed(
        `copying the app's sqlite databases failed (exit ${lite.exitCode}): ${whyItFailed(lite)}`,
      );
    for (const copy of parseSqliteCopies(lite.stdout)) {
      if (copy.bytes === 0) return failed(`the sqlite database ${copy.source} gave an empty copy`);
      databases.push({
        kind: "sqlite",
        file: `databases/${copy.file}`,
        bytes: copy.bytes,
        source: copy.source,
      });
    }
    if (state === "empty" && databases.length === 0)
      return failed("nothing to back up: ~/app is empty and no database was found");

    // 2. the manifest, first member of the archive
    const manifest: BackupManifest = {
      format: 1,
      pod: name,
      preset,
      created_at: new Date().toISOString(),
      databases,
      excluded,
    };
    const json = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    const wrote = await runScript(
      docker,
      container,
      WRITE,
      [`${spool}/podhost-backup.json`, String(json.length)],
      {
        ...short,
        stdin: json,
      },
    );
    if (wrote.exitCode !== 0)
      return failed(`writing the manifest failed (exit ${wrote.exitCode}): ${whyItFailed(wrote)}`);

    // 3. the archive, streamed as it is made
    log.info("backup: archiving and sending", { pod: name, backupId });
    const sent = await sendArchive(
      deps,
      store,
      container,
      spool,
      [...excluded, ...keptOut],
      backupId,
      signal,
    );
    if (!sent.ok) return failed(sent.reason);
    const counted = await runScript(docker, container, COUNT, [`${spool}.idx`], short);
    const files = Number.parseInt(counted.stdout.trim(), 10) || 0;
    log.info("backup: sent", { pod: name, backupId, bytes: sent.bytes, files });
    return { ok: true, bytes: sent.bytes, sha256: sent.sha256, files, databases };
  } finally {
    await runScript(docker, container, CLEAN, [spool], short).catch((err: unknown) =>
      log.warn("backup: the spool could not be removed", { pod: name, backupId, error: String(err) }),
    );
    await ws.close();
  }
}

async function sendArchive(
  deps: BackupDeps,
  store: BackupStore,
  container: string,
  spool: string,
  excluded: string[],
  backupId: string,
  signal: AbortSignal,
): Promise<{ ok: true; bytes: number; sha256: string } | { ok: false; reason: string }> {
  const timeout = AbortSignal.any([signal, AbortSignal.timeout((ARCHIVE_TIMEOUT_S + 30) * 1000)]);
  const run = await deps.exec(
    container,
    [
      TIMEOUT,
      "-k",
      "5",
      String(ARCHIVE_TIMEOUT_S),
      BASH,
      "-c",
      ARCHIVE,
      "bash",
      spool,
      `${spool}.idx`,
      ...excluded,
    ],
    { workingDir: HOME, signal: timeout },
  );
  let exit: { exitCode: number; stderr: string } | null = null;
  // The stream ends only once tar and gzip have exited 0: a failure breaks the upload instead of
  // completing it, so the control plane never keeps a truncated archive as if it were whole.
  const tally = new Tally(async () => {
    exit = await run.done;
    if (exit.exitCode !== 0) throw new Error(archivingFailed(exit));
  });
  run.stdout.on("error", (err) => tally.destroy(err));
  run.stdout.pipe(tally);
  let stored: { bytes: number; sha256: string };
  try {
    stored = await store.write(backupId, tally, timeout);
  } catch (err) {
    // Which side failed first decides the reason: an archive that ended badly before the upload
    // broke (`exit` is known) is the pod's; otherwise the upload broke (the control plane restarted
    // or the connection was cut) and the tar killed here (exit 143) is no cause, so the upload's
    // error is thrown and the workflow retries the step once the control plane answers again.
    // (a cast: \`exit\` is set in a callback, which the compiler's narrowing of it cannot see)
    const failedFirst = exit as { exitCode: number; stderr: string } | null;
    run.abort();
    await run.done.catch(() => null);
    if (failedFirst && failedFirst.exitCode !== 0) return { ok: false, reason: archivingFailed(failedFirst) };
    throw err;
  }
  const sha256 = tally.sha256 ?? "";
  if (stored.bytes !== tally.bytes || stored.sha256 !== sha256)
    return {
      ok: false,
      reason: `the control plane stored ${stored.bytes} bytes (sha256 ${stored.sha256}) but the agent sent ${tally.bytes} (sha256 ${sha256})`,
    };
  return { ok: true, bytes: tally.bytes, sha256 };
}

/** the archive's own failure, never with an empty reason (a process killed by a signal says nothing) */
const archivingFailed = (exit: { exitCode: number; stderr: string }) =>
  `archiving failed (exit ${exit.exitCode}): ${tail(exit.stderr) || (exit.exitCode > 128 ? `killed by signal ${exit.exitCode - 128}` : "tar and gzip printed nothing")}`;
