import {
  BackupManifest,
  type DumpEntry,
  EXCLUDED_DIRS,
  type RestoreOutcome,
} from "../../shared/protocol/backups";
import { namingFullDisk, sayWhyTarFailed } from "../disk/full";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { BASH, TIMEOUT } from "../docker/pod-bin";
import { RUNIT_FNS } from "../docker/runit";
import { AgentError } from "../errors";
import { RELOAD_SERVICES } from "../inside/reload";
import type { Logger } from "../logger";
import { EarlyLoads } from "./early-load";
import { type Expected, mismatch, streamChecked } from "./fetch";
import { runScript, whyItFailed } from "./pod-run";
import { findSelfRunServers, type SelfRunServer } from "./self-run";
import { type SelfRunDeps, selfRunLabel, selfRunLogin, withSelfRunBox } from "./self-run-db";
import { loadService, pipeLoad } from "./services";
import type { BackupStore } from "./store";
import { openWorkspace, type Workspace, type WorkspaceDeps } from "./workspace";

/**
 * `backup.restore` (docs/backups.md "On the host"). The archive is read back and unpacked by the
 * pod's own tar, as pod_user, into a staging directory in its home (`~/.pod/restore/<id>/`: a
 * hostile member can only land where the tenant could write anyway, and it counts against the
 * pod's disk), counted and hashed on the way; nothing else is touched unless the bytes are the
 * recorded ones. Then: the app's services stopped, ~/app swapped for the archive's app/ (two
 * renames, the old app removed), SQLite dumps copied over their files, service dumps loaded with
 * `svc-load` into the pod's running sidecars, the services started again. A stopped pod is restored
 * the same way in helper containers made like it (./workspace.ts) and left stopped.
 */

export interface RestoreDeps extends WorkspaceDeps, SelfRunDeps {
  docker: DockerClient;
  exec: StreamExecutor;
  store?: BackupStore;
  prefix: string;
  log: Logger;
}

/** reading and unpacking the archive, at most */
const STAGE_TIMEOUT_S = 3600;

export const stagingOf = (backupId: string) => `${HOME}/.pod/restore/${backupId}`;

const WIPE = `wipe() { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }`;

/** STAGE's word once tar reached the archive's app/: the manifest and every dump are whole (./early-load.ts) */
const DATABASES_UNPACKED = "databases-unpacked";

// $1 the staging dir, $2 the archive's byte count; the archive on stdin. tar names each member as
// it starts on it (a line at a time: stdbuf, as tar's stdio would hold them in 4 KiB blocks): the
// first app/ one is told once, the rest of the names go nowhere.
const STAGE = `set -u
${WIPE}
s=$1; n=$2
wipe "$s"
mkdir -p "$s/x" || exit 70
umask 022
/usr/bin/head -c "$n" | /usr/bin/stdbuf -oL /bin/tar -x -v -z -f - -C "$s/x" --no-same-owner --no-same-permissions --warning=no-timestamp |
  { while IFS= read -r m; do case $m in app | app/*) echo "${DATABASES_UNPACKED}"; break ;; esac; done; exec /bin/cat >/dev/null; }
r=("\${PIPESTATUS[@]}")
if [ "\${r[1]}" -ne 0 ]; then ${sayWhyTarFailed('"$s/x"')}; exit 71; fi
echo staged`;

// $1 the staging dir, then the dump members the manifest names: `ok` when app/ is a directory
// and every dump a file, else the reason.
const INSPECT = `set -u
s=$1; shift
[ -d "$s/x/app" ] && [ ! -L "$s/x/app" ] || { echo "the archive has no app/ directory"; exit 0; }
for f in "$@"; do [ -f "$s/x/$f" ] && [ ! -L "$s/x/$f" ] || { echo "the dump $f is not in the archive"; exit 0; }; done
echo ok`;

const MANIFEST = `set -u
[ -f "$1/x/podhost-backup.json" ] && [ ! -L "$1/x/podhost-backup.json" ] || exit 3
/usr/bin/head -c 1048576 "$1/x/podhost-backup.json"`;

// $1 stop or start, then the services (../docker/runit.ts: sv's own waits cost ~0.4 s each)
const SV = `set -u
${RUNIT_FNS}
a=$1; shift
case $a in stop) sv_stop "$@" ;; start) sv_start "$@" ;; esac
exit 0`;

// $1 the staging dir, then the excluded names. `had <name>` for each one the old app had.
const SWAP = `set -u
${WIPE}
s=$1; shift
for e in "$@"; do if [ -e "${HOME}/app/$e" ] || [ -L "${HOME}/app/$e" ]; then echo "had $e"; fi; done
if [ -e "${HOME}/app" ] || [ -L "${HOME}/app" ]; then mv -T "${HOME}/app" "$s/old" || exit 74; fi
if ! mv -T "$s/x/app" "${HOME}/app"; then [ -e "$s/old" ] && mv -T "$s/old" "${HOME}/app"; exit 75; fi
chmod 755 "${HOME}/app"
echo swapped`;

// $1 the staging dir, then self-run servers' data directories under ~/app: each moves from the old
// app into the new one (a server still running there follows its directory: a rename).
const KEEP_DATADIRS = `set -u
${WIPE}
s=$1; shift
for d in "$@"; do
  o="$s/old/$d"; n="${HOME}/app/$d"
  [ -d "$o" ] && [ ! -L "$o" ] || continue
  [ -e "$n" ] || [ -L "$n" ] && wipe "$n"
  /bin/mkdir -p -- "$(/usr/bin/dirname -- "$n")" && /bin/mv -T -- "$o" "$n" || exit 76
done`;

// $1 the dump in staging, $2 the database's path under ~/app: the consistent copy replaces the
// file the archive brought (which may have been mid-write), and its journal files go.
const SQLITE_PUT = `set -u
d="${HOME}/app/$2"
/bin/mkdir -p -- "$(/usr/bin/dirname -- "$d")" || exit 3
/bin/cp -f -- "$1" "$d.podhost-restore" || exit 4
/bin/mv -f -- "$d.podhost-restore" "$d" || exit 5
/bin/rm -f -- "$d-wal" "$d-shm" "$d-journal"`;

// $1 the dump in staging, $2 a name for it, $3 where it goes if /tmp has no room (or is the
// helper's, gone with it: $4 is not "tmp"). The path it is at.
const KEEP = `set -u
f=$1; t=/tmp/$2
if [ "$4" = tmp ]; then
  size=$(/usr/bin/stat -c %s -- "$f") || exit 3
  avail=$(/bin/df --output=avail -B1 /tmp | /usr/bin/tail -n 1 | /usr/bin/tr -d ' ')
  if [ "$size" -lt $((avail - 16777216)) ] && /bin/cp -- "$f" "$t"; then echo "$t"; exit 0; fi
  /bin/rm -f -- "$t"
fi
/bin/mkdir -p -- "$3" && /bin/mv -f -- "$f" "$3/$2" && echo "$3/$2"`;

// The staging dir (the old app inside it) moves out of the way at once and is removed after the
// answer: deleting a large old app is no part of bringing the pod back. On a full disk the rename
// itself can fail (btrfs reserves metadata space for it, counted against the pod's quota): then
// the staging is removed where it is, before the answer, as nothing else would remove it.
const RETIRE = `set -u
${WIPE}
[ -e "$1" ] || exit 0
g="$1.gone-$(/bin/date +%s%N)"
/bin/mv -T -- "$1" "$g" 2>/dev/null || { wipe "$1"; exit 0; }
echo "$g"`;
const CLEAN = `${WIPE}
wipe "$1"`;

type Outcome = RestoreOutcome;
const failed = (reason: string, filesRestored = false, dumpPath: string | null = null): Outcome => ({
  ok: false,
  reason: reason.slice(0, 2000),
  dump_path: dumpPath,
  files_restored: filesRestored,
});

/** a database's path under ~/app as the manifest names it: relative, no `..`, no empty part */
const safeRelative = (p: string) =>
  p.length > 0 &&
  !p.startsWith("/") &&
  p.split("/").every((part) => part !== "" && part !== "." && part !== "..");
const safeDumpMember = (f: string) => /^databases\/[A-Za-z0-9._-]{1,200}$/.test(f) && !f.endsWith("/..");

export async function restoreBackup(
  deps: RestoreDeps,
  params: Expected & { name: string; preset: keyof typeof EXCLUDED_DIRS },
  signal: AbortSignal,
): Promise<Outcome> {
  const { docker, log } = deps;
  const { name, backupId, preset } = params;
  const store = deps.store;
  if (!store) throw new AgentError("unavailable", "this agent has no connection to read backups");
  const opened = await openWorkspace(deps, name, { whenStopped: "helper", job: "restored", signal });
  if (!opened.ok) return failed(opened.reason);
  const ws = opened.workspace;
  const container = ws.container;
  const staging = stagingOf(backupId);
  const short = { timeoutS: 120, signal };
  // a stopped pod's app services are not running: nothing to stop or start again
  const services = ws.stopped ? [] : (RELOAD_SERVICES[preset] ?? []);
  let servicesDown = false;
  let keepStaging = false;
  // a running pod's service dumps load while its app's files unpack (./early-load.ts)
  const early = ws.stopped ? null : new EarlyLoads(deps, ws, staging, signal);
  const startEarly = async () => {
    const raw = await runScript(docker, container, MANIFEST, [staging], {
      ...short,
      maxOutputBytes: 1024 * 1024 + 1,
    });
    const parsed = BackupManifest().safeParse(JSON.parse(raw.stdout));
    if (parsed.success) await early?.start(parsed.data.databases.filter((d) => safeDumpMember(d.file)));
  };
  let earlyStarted: Promise<void> = Promise.resolve();
  try {
    // 1. read back and unpack into staging, checking the bytes before anything else is touched
    log.info("backup restore: reading the archive into staging", { pod: name, backupId });
    const timeout = AbortSignal.any([signal, AbortSignal.timeout((STAGE_TIMEOUT_S + 30) * 1000)]);
    const read = await streamChecked(
      store,
      params,
      async (stdin) => {
        const run = await deps.exec(
          container,
          [
            TIMEOUT,
            "-k",
            "5",
            String(STAGE_TIMEOUT_S),
            BASH,
            "-c",
            STAGE,
            "bash",
            staging,
            String(params.bytes),
          ],
          { stdin, signal: timeout, workingDir: HOME },
        );
        if (early) {
          let seen = "";
          const look = (b: Buffer) => {
            seen = (seen + b.toString("latin1")).slice(-64);
            if (!seen.includes(DATABASES_UNPACKED)) return;
            run.stdout.off("data", look);
            earlyStarted = startEarly().catch((err: unknown) =>
              log.warn("backup restore: the dumps could not be loaded early", {
                pod: name,
                error: String(err),
              }),
            );
          };
          run.stdout.on("data", look);
        }
        return run;
      },
      timeout,
    );
    await earlyStarted;
    if (!read.matches) return failed(mismatch(params, read));
    if (read.run.exitCode !== 0 || !read.run.stdout.includes("staged"))
      return failed(
        namingFullDisk(
          `the archive could not be unpacked (exit ${read.run.exitCode}): ${whyItFailed(read.run)}`,
        ),
      );

    // 2. what it holds, and whether the pod can take it
    const raw = await runScript(docker, container, MANIFEST, [staging], {
      ...short,
      maxOutputBytes: 1024 * 1024 + 1,
    });
    let manifest: BackupManifest;
    try {
      manifest = BackupManifest().parse(JSON.parse(raw.stdout));
    } catch {
      return failed("the archive has no valid podhost-backup.json");
    }
    for (const db of manifest.databases) {
      if (!safeDumpMember(db.file))
        return failed(`the manifest names an invalid dump member ${JSON.stringify(db.file)}`);
      if (db.kind === "sqlite" && !(db.source && safeRelative(db.source)))
        return failed(`the manifest names an invalid sqlite path ${JSON.stringify(db.source ?? "")}`);
      if (db.port !== undefined && db.kind === "sqlite")
        return failed(`the manifest names a sqlite dump ${JSON.stringify(db.file)} with a port`);
      if (db.port !== undefined && db.source !== undefined && !safeRelative(db.source))
        return failed(`the manifest names an invalid data directory ${JSON.stringify(db.source)}`);
    }
    const look = await runScript(
      docker,
      container,
      INSPECT,
      [staging, ...manifest.databases.map((d) => d.file)],
      short,
    );
    if (look.stdout.split("\n")[0] !== "ok") return failed(look.stdout.split("\n")[0] || whyItFailed(look));
    for (const db of manifest.databases) {
      if (db.kind !== "sqlite" && db.port === undefined && !ws.services.includes(db.kind))
        return failed(`the backup holds a ${db.kind} dump but the pod has no ${db.kind} service`);
    }

    // 3. services down, files swapped
    log.info("backup restore: stopping services and swapping ~/app", { pod: name, backupId });
    if (services.length > 0) {
      await runScript(docker, container, SV, ["stop", ...services], short);
      servicesDown = true;
    }
    const swap = await runScript(docker, container, SWAP, [staging, ...EXCLUDED_DIRS[preset]], short);
    if (swap.exitCode !== 0 || !swap.stdout.includes("swapped"))
      return failed(`replacing ~/app failed (exit ${swap.exitCode}): ${whyItFailed(swap)}`);
    const dropped = [...swap.stdout.matchAll(/^had (.+)$/gm)].map((m) => m[1] ?? "");
    const selfRun = manifest.databases.filter((d) => d.port !== undefined);
    const datadirs = selfRun.flatMap((d) => (d.source ? [d.source] : []));
    if (datadirs.length > 0) {
      const kept = await runScript(docker, container, KEEP_DATADIRS, [staging, ...datadirs], short);
      if (kept.exitCode !== 0)
        return failed(
          `keeping the databases' data directories failed (exit ${kept.exitCode}): ${whyItFailed(kept)}`,
          true,
        );
    }

    // 4. databases back, each into its place; the first failure leaves its dump in the pod. A
    // self-run server's dump waits for the app's services (which may run it) to be back.
    for (const db of [...manifest.databases.filter((d) => d.port === undefined), ...selfRun]) {
      if (db.port !== undefined && servicesDown) {
        await runScript(docker, container, SV, ["start", ...services], short);
        servicesDown = false;
      }
      log.info("backup restore: re-importing", { pod: name, backupId, kind: db.kind, file: db.file });
      const dump = `${staging}/x/${db.file}`;
      const failure =
        db.port !== undefined && db.kind !== "sqlite"
          ? await reimportSelfRun(deps, ws, name, backupId, { kind: db.kind, port: db.port }, dump, signal)
          : (await early?.finish(db.file))
            ? null
            : await reimport(deps, ws, db, dump, signal);
      if (failure) {
        const keep = await runScript(
          docker,
          container,
          KEEP,
          [
            dump,
            `podhost-restore-${backupId}-${db.file.slice("databases/".length)}`,
            `${HOME}/.pod/restore-failed`,
            ws.stopped ? "home" : "tmp",
          ],
          short,
        );
        const kept = keep.exitCode === 0 ? keep.stdout.trim().split("\n").at(-1) || null : null;
        if (!kept) keepStaging = true;
        return failed(failure, true, kept ?? dump);
      }
    }
    log.info("backup restore: done", { pod: name, backupId });
    return { ok: true, databases: manifest.databases, dependencies_dropped: dropped };
  } finally {
    await earlyStarted;
    await early?.abandon();
    if (servicesDown) {
      await runScript(docker, container, SV, ["start", ...services], short).catch((err: unknown) =>
        log.warn("backup restore: services could not be started", { pod: name, error: String(err) }),
      );
    }
    if (!keepStaging) {
      const retired = await runScript(docker, container, RETIRE, [staging], short).catch(() => null);
      const gone = retired?.exitCode === 0 ? retired.stdout.trim() : "";
      const clean = async () => {
        if (gone)
          await runScript(docker, container, CLEAN, [gone], { timeoutS: 600 }).catch((err: unknown) =>
            log.warn("backup restore: staging could not be removed", { pod: name, error: String(err) }),
          );
      };
      // a stopped pod's helper goes with the answer: its clean-up cannot be left running behind it
      if (ws.stopped) await clean();
      else void clean();
    }
    await ws.close();
  }
}

/** how long a self-run server may take to listen again once the app's services are back */
const SELF_RUN_BACK_S = 60;

/** a self-run server's dump loaded into it once it listens again; the failure's reason, or null */
async function reimportSelfRun(
  deps: RestoreDeps,
  ws: Workspace,
  pod: string,
  backupId: string,
  wanted: Pick<SelfRunServer, "kind" | "port">,
  dump: string,
  signal: AbortSignal,
): Promise<string | null> {
  const label = selfRunLabel(wanted);
  if (ws.stopped) return `the pod is stopped, so ${label} is not running to load its dump into`;
  const until = Date.now() + SELF_RUN_BACK_S * 1000;
  let server: SelfRunServer | undefined;
  for (;;) {
    server = (await findSelfRunServers(deps.docker, ws.container)).find(
      (s) => s.kind === wanted.kind && s.port === wanted.port,
    );
    if (server || Date.now() > until || signal.aborted) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (!server) return `${label} was not listening within ${SELF_RUN_BACK_S} s of the app's start`;
  const login = await selfRunLogin(deps.docker, deps.prefix, pod, server);
  if (!login.ok) return login.reason;
  return withSelfRunBox(deps, ws.container, `${backupId}-r`, server, login.login, ({ load }) =>
    pipeLoad(deps, ws.container, load, dump, signal),
  );
}

/** one database back from its dump; the failure's reason, or null */
async function reimport(
  deps: RestoreDeps,
  ws: Workspace,
  db: DumpEntry,
  dump: string,
  signal: AbortSignal,
): Promise<string | null> {
  if (db.kind === "sqlite") {
    const r = await runScript(deps.docker, ws.container, SQLITE_PUT, [dump, db.source ?? ""], {
      timeoutS: 600,
      signal,
    });
    return r.exitCode === 0
      ? null
      : `putting back the sqlite database ${db.source} failed (exit ${r.exitCode}): ${whyItFailed(r)}`;
  }
  const service = await ws.serverOf(db.kind);
  if (!service.ok) return service.reason;
  try {
    return await loadService(deps, ws.container, service.sidecar, dump, signal);
  } finally {
    await service.release();
  }
}
