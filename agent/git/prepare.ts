import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { fullDisk, fullDiskReason, namingFullDisk, sayWhyTarFailed } from "../disk/full";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { SH } from "../docker/pod-bin";
import { AgentError } from "../errors";
import { STANDBY_PORT } from "../ingress/vhost";
import type { BuildBox } from "./build";
import { CANDIDATE_RUN, candidateArgs, type NpmStart } from "./candidate";
import { DeployFailure } from "./failure";
import type { DeployLog } from "./log";
import { PRELUDE, RELEASES } from "./release";
import type { StandbyCandidate } from "./standby";

/**
 * A release made ready in one process in the build container: the commit's tar unpacked into
 * `~/releases/<id>`, the pod's .env copied in, the dependencies reused (hard links of a kept
 * release's, when its dependency files were the same) or installed, and the build run. One exec
 * for all of it: each exec is ~40–60 ms of the engine's or runc's own on a deploy's path.
 *
 * The script is fixed text; the ids, the commands and the PATH are positional arguments. The
 * install and build commands are the repository's or the user's and run as they would in a shell
 * (`bash -c`), as pod_user, inside the build container's limits. Their output, and the script's,
 * is the deploy log. What the script reports to the agent (unpacked, reused, a step starting, a
 * step's exit status) are lines starting with a random token of this run: the build's output
 * cannot pass for one unless it reads the script's arguments, which only misleads its own deploy.
 */

// $1 id, $2 the release whose dependency directory to reuse ("" none), $3 that directory's name,
// $4 the report token, $5 the install command ("" none), $6 the build command ("" none), $7 the
// pod's PATH for them, $8 the candidate's script to become once ready ("" none), the rest its
// arguments (./candidate.ts).
// Stdin: the commit's tar (git archive). Exits: 70 the release's directory, 71 tar, 73 .env, 75
// reuse, 80 a step failed (its status reported first); with a candidate, this process becomes it.
const PREPARE = `${PRELUDE}
id=$1; prev=$2; dep=$3; m=$4; install=$5; build=$6; podpath=$7; run=$8; d="$R/$id"
shift 8
exec 2>&1
say() { echo "$m $*"; }
mkdir -p "$R" "$H/logs" "$H/.cache" "$H/.pod" || exit 70
[ -e "$d" ] && wipe "$d"
mkdir "$d" || exit 70
/usr/bin/timeout -k 5 600 tar -x -f - -C "$d" --no-same-owner --no-same-permissions --warning=no-timestamp || { ${sayWhyTarFailed('"$d"')}; exit 71; }
chmod 755 "$d"
say unpacked
copy_env "$d" || exit 73
reused=
if [ -n "$prev" ] && [ -n "$dep" ] && [ -d "$R/$prev/$dep" ] && [ ! -L "$R/$prev/$dep" ] && [ ! -e "$d/$dep" ]; then
  cp -al "$R/$prev/$dep" "$d/$dep" || exit 75
  # a venv names its own path in its scripts (shebangs, activate): point the copies at this release
  # (a new file each, so the hard-linked originals of the previous release stay as they were)
  if [ "$dep" = .venv ]; then
    for f in "$d/.venv/bin/"*; do
      [ -f "$f" ] && [ ! -L "$f" ] && grep -qF -- "$R/$prev/.venv" "$f" 2>/dev/null || continue
      sed "s|$R/$prev/.venv|$d/.venv|g" "$f" >"$f.podhost" && chmod --reference="$f" "$f.podhost" && mv -f "$f.podhost" "$f" || exit 75
    done
  fi
  reused=1
  say reused
fi
cd "$d" || exit 70
# the pod's Node first: npm and node straight from it, not through the image's version shims
if [ -n "$install$build" ]; then
  nb=/opt/node/$(/opt/podhost/bin/pod-node-version 2>/dev/null)/bin
  [ -x "$nb/node" ] && podpath="$nb:$podpath"
fi
export PATH="$podpath"
step() { # $1 install|build, $2 the command
  say step "$1"
  /bin/bash -c "$2" </dev/null
  s=$?
  [ "$s" -eq 0 ] || { say failed "$1" "$s"; exit 80; }
}
[ -z "$install" ] || [ -n "$reused" ] || step install "$install"
[ -z "$build" ] || step build "$build"
say ready
[ -n "$run" ] || exit 0
exec /bin/bash -c "$run" run-app "$@"`;

export interface PrepareParams {
  box: BuildBox;
  id: string;
  /** the commit's files as a tar stream */
  tar: Readable;
  /** a kept release whose dependency directory to hard-link (same dependency files) */
  reuseFrom: { release: string; dir: string } | null;
  install: string | null;
  build: string | null;
  /** the pod's PATH (its image's), for the install and build (and the candidate) */
  path: string;
  /** start the release's app on the standby port once it is ready (./standby.ts) */
  candidate: { preset: string; npm: NpmStart | null } | null;
  log: DeployLog;
  signal?: AbortSignal;
}

/**
 * Unpack, reuse or install, build, and start the candidate when asked: whether the dependencies were
 * reused, and the candidate (whose process is this exec's, so its end is the exec's). Failures by class.
 */
export async function prepareRelease(
  exec: StreamExecutor,
  p: PrepareParams,
): Promise<{ reused: boolean; candidate: StandbyCandidate | null }> {
  const token = randomBytes(16).toString("hex");
  const argv = [
    SH,
    "-c",
    PREPARE,
    "sh",
    p.id,
    p.reuseFrom?.release ?? "",
    p.reuseFrom?.dir ?? "",
    token,
    p.install ?? "",
    p.build ?? "",
    p.path,
    ...(p.candidate
      ? [
          CANDIDATE_RUN,
          ...candidateArgs(p.candidate.preset, `${RELEASES}/${p.id}`, STANDBY_PORT, p.candidate.npm),
        ]
      : [""]),
  ];
  const seen = new Set<string>();
  let ready: () => void = () => undefined;
  const readyReported = new Promise<void>((resolve) => {
    ready = resolve;
  });
  let failed: { step: string; status: number } | null = null;
  const reports = new Reports(token, p.log, ([what = "", step, status]) => {
    seen.add(what);
    switch (what) {
      case "reused":
        if (p.reuseFrom)
          p.log.note(`dependencies unchanged: reusing ${p.reuseFrom.dir} of release ${p.reuseFrom.release}`);
        break;
      case "step":
        p.log.note(`$ ${step === "install" ? p.install : p.build}`);
        break;
      case "failed":
        failed = { step: step ?? "", status: Number(status) };
        break;
      case "ready":
        if (p.candidate)
          p.log.note(`starting the new release beside the serving one (standby port ${STANDBY_PORT})`);
        ready();
    }
  });
  const run = await exec(p.box.name, argv, {
    id: p.box.id,
    workingDir: HOME,
    stdin: p.tar,
    signal: p.signal,
  });
  run.stdout.on("data", (chunk: Buffer) => reports.push(chunk));
  let streamError: unknown;
  p.tar.once("error", (e) => {
    streamError = e;
  });
  let exitCode: number;
  try {
    // with a candidate the exec goes on as its process: "ready" ends the preparation
    const ended = await (p.candidate ? Promise.race([run.done, readyReported.then(() => null)]) : run.done);
    if (ended === null) return { reused: seen.has("reused"), candidate: { exited: run.done } };
    exitCode = ended.exitCode;
  } catch (err) {
    throw streamError ?? err;
  }
  reports.end();
  if (streamError) throw streamError;
  if (p.box.timedOut) throw new DeployFailure("timeout", "the build did not finish in time");
  const f = failed as { step: string; status: number } | null;
  if (f) throw stepFailure(f, f.step === "install" ? p.install : p.build, reports.tail());
  if (!seen.has("unpacked")) throw fail("unpacking the commit", exitCode, reports.tail());
  if (!seen.has("ready")) throw fail("preparing the release", exitCode, reports.tail());
  // a candidate that ended at once: the switch finds it exited (and tries a container)
  if (p.candidate) return { reused: seen.has("reused"), candidate: { exited: Promise.resolve() } };
  if (exitCode !== 0) throw fail("preparing the release", exitCode, reports.tail());
  return { reused: seen.has("reused"), candidate: null };
}

/**
 * An install or build step that failed, by its class. A step that failed on a full disk says which
 * (its output has the kernel's words, "Disk quota exceeded" from the pod's quota): the tenant can
 * free space or move to a bigger plan, where "exit status 1" alone sends them to their build script.
 */
export function stepFailure(
  f: { step: string; status: number },
  command: string | null,
  tail: string,
): DeployFailure {
  const oom = f.status === 137 ? " (killed: out of memory or time)" : "";
  const what =
    f.step === "install"
      ? `installing dependencies failed with exit status ${f.status}${oom}: ${command}`
      : `the build failed with exit status ${f.status}${oom}: ${command}`;
  const cls = f.step === "install" ? "dependency_install" : "build_script";
  const full = fullDisk(tail);
  if (!full) return new DeployFailure(cls, what);
  // ENOSPC in a build is the host's disk under the pod's files or the build's own /tmp (a tmpfs)
  const disk =
    full === "quota" ? fullDiskReason(full) : "a disk the build wrote to is full (no space left on device)";
  return new DeployFailure(cls, `${disk}: ${what}`);
}

const fail = (what: string, exitCode: number, tail: string) =>
  new AgentError("internal", namingFullDisk(`${what} failed (exit ${exitCode}): ${tail.trim().slice(-300)}`));

/** the longest line a report can be (the token, a word, a step, a status) */
const MAX_REPORT = 128;
/** what is kept of the output's end for an error message */
const TAIL = 1024;

/**
 * The script's output split into its reports (whole lines starting with the token) and the rest,
 * which goes to the deploy log as it comes: only the start of a line is held back, and only while
 * it could still become a report.
 */
class Reports {
  private readonly decoder = new StringDecoder("utf8");
  private line = "";
  private mid = false;
  private last = "";

  constructor(
    private readonly token: string,
    private readonly log: DeployLog,
    private readonly onReport: (words: string[]) => void,
  ) {}

  push(chunk: Buffer): void {
    this.take(this.decoder.write(chunk));
  }

  end(): void {
    this.take(this.decoder.end());
    if (this.line) this.out(this.line);
    this.line = "";
  }

  /** the output's last bytes (reports left out) */
  tail(): string {
    return this.last;
  }

  private take(text: string): void {
    let rest = this.line + text;
    this.line = "";
    if (this.mid) {
      // the rest of a line already passed on: never a report
      const nl = rest.indexOf("\n");
      this.out(nl < 0 ? rest : rest.slice(0, nl + 1));
      if (nl < 0) return;
      rest = rest.slice(nl + 1);
      this.mid = false;
    }
    for (;;) {
      const nl = rest.indexOf("\n");
      if (nl < 0) break;
      this.lineDone(rest.slice(0, nl + 1));
      rest = rest.slice(nl + 1);
    }
    // an unfinished line is held only while it may still become a report
    const head = `${this.token} `;
    if (rest.length <= MAX_REPORT && (rest.startsWith(head) || head.startsWith(rest))) this.line = rest;
    else if (rest) {
      this.out(rest);
      this.mid = true;
    }
  }

  private lineDone(line: string): void {
    if (line.length <= MAX_REPORT && line.startsWith(`${this.token} `))
      this.onReport(
        line
          .slice(this.token.length + 1)
          .trim()
          .split(" "),
      );
    else this.out(line);
  }

  private out(text: string): void {
    this.log.write(text);
    this.last = (this.last + text).slice(-TAIL);
  }
}
