import { PassThrough, type Readable, type Writable } from "node:stream";
import { CappedBytes } from "../docker/capped";
import type { StreamExecutor, StreamedExec } from "../docker/exec-stream";
import { AgentError } from "../errors";
import type { RelayClient } from "../transfer/relay";
import { EXIT, fileFailure, runFileScript, streamFileScript } from "./run";
import { needRelay, TRANSFER_TIMEOUT_S } from "./transfer";

/**
 * Writing a file into a pod in two steps (shared/protocol/files.ts): `receive` streams a relay's
 * bytes into a temp file, and the control plane — which alone knows whether the caller's upload came
 * whole — then has it committed (renamed over the target) or discarded. Starting a process in a
 * container costs tens of ms of CPU, so the process that received the file stays and waits for the
 * verdict on a pipe of its own (fd 3, where `runc exec` starts it): committing then costs a few
 * file operations and no process start. Through the engine's exec, which has no such pipe, a second
 * process started during the transfer waits on its stdin instead.
 */

/** received files wait under this name until they are committed; nothing else is ever named so */
export const TEMP_PREFIX = ".upload-";
/** a received file whose verdict does not come within this is removed */
const VERDICT_WAIT_MS = 120_000;
/** what is kept of the receive script's output (two short lines) */
const COLLECTED_BYTES = 16 * 1024;

/**
 * With $t $f $d $n set: the temp file, checked for the expected size, moved beside the target when
 * it is elsewhere (a rename, or a copy from another filesystem to a second temp file), then renamed
 * over the target (\`mv -T\`: a symlink at the path is replaced, never written through; a directory
 * there is refused). An existing file's mode is kept; a new file is 644. On failure the temp file
 * is gone.
 */
const COMMIT_STEPS = `[ -f "$t" ] && [ ! -L "$t" ] || exit ${EXIT.missing}
trap 'rm -f -- "$t"' EXIT
[ "$(stat -c %s -- "$t")" = "$n" ] || exit ${EXIT.shortWrite}
if [ -d "$f" ] && [ ! -L "$f" ]; then exit ${EXIT.isDir}; fi
if [ -e "$d" ] && [ ! -d "$d" ]; then exit ${EXIT.notDir}; fi
[ -d "$d" ] || mkdir -p -- "$d" || exit 1
if [ "\${t%/*}" != "$d" ]; then
  u=$(mktemp -- "$d/${TEMP_PREFIX}XXXXXX") || exit 1
  mv -f -- "$t" "$u" || { rm -f -- "$u"; exit 1; }
  t=$u
fi
if [ -f "$f" ] && [ ! -L "$f" ]; then chmod --reference="$f" -- "$t"; else chmod 644 -- "$t"; fi || exit 1
mv -fT -- "$t" "$f" || exit 1
trap - EXIT`;

const COMMIT = `t=$1 f=$2 d=$3 n=$4
${COMMIT_STEPS}`;

/**
 * The waiting committer: its verdict comes on stdin, a line each (checked paths hold no control
 * characters): `commit`, temp, target, its directory, size; or `discard`, temp. No verdict (stdin
 * closed) does nothing here; the receiving process that becomes the committer (RECEIVE) removes
 * its temp file then.
 */
const COMMITTER = `IFS= read -r a || exit 0
IFS= read -r t || exit 0
case $a in
discard) exec rm -f -- "$t" ;;
commit) IFS= read -r f && IFS= read -r d && IFS= read -r n || exit 1 ;;
*) exit 1 ;;
esac
${COMMIT_STEPS}`;

/** what the receive script prints once every byte is in the temp file */
const RECEIVED = "received";

/**
 * A new temp file in `d` (created if missing), filled from stdin. Its name is printed first, so
 * whatever happens next the agent can remove it; RECEIVED once `cat` read its input to the end and
 * wrote every byte (the size is checked again at commit). Then, given a verdict pipe as fd 3, it
 * is the committer (COMMITTER, reading from that pipe); else it is done, and the temp file waits
 * for the separate committer.
 *
 * The temp file is removed when the process ends without a verdict to keep it: the agent gone (a
 * crash or a restart closes stdin, so `cat` ends early, then stdout's pipe breaks or the verdict
 * pipe closes), a signal (`timeout`, the engine), a failure. Only the agent knew the temp file's
 * name, so nothing else would ever remove a part-written file (a chaos test saw one stay in
 * `~/app` after the agent's SIGKILL mid-upload). A commit asked of the restarted agent then finds
 * no file and says to upload again.
 */
export const RECEIVE = `d=$1
if [ -e "$d" ] && [ ! -d "$d" ]; then exit ${EXIT.notDir}; fi
[ -d "$d" ] || mkdir -p -- "$d" || exit 1
t=$(mktemp -- "$d/${TEMP_PREFIX}XXXXXX") || exit 1
trap 'rm -f -- "$t"' EXIT
trap 'exit 1' HUP INT TERM PIPE
printf '%s\\n' "$t"
cat >"$t" || exit 1
printf '${RECEIVED}\\n'
[ -e /dev/fd/3 ] || { trap - EXIT; exit 0; }
exec <&3 3<&-
${COMMITTER}`;

const DISCARD = `exec rm -f -- "$1"`;

interface Committer {
  verdict: Writable;
  run: Promise<StreamedExec>;
  /** the pod the temp file is in */
  pod: string;
  timer?: NodeJS.Timeout;
}

/** A pod's file writes: receive, commit, discard (see the top of this file). */
export class FileReceiver {
  /** committers waiting for their verdict, by temp file */
  private readonly waiting = new Map<string, Committer>();

  constructor(
    private readonly exec: StreamExecutor,
    private readonly prefix: string,
  ) {}

  /**
   * Stream the relay's bytes into a new temp file in `dir`; resolves with its path and size once
   * the relay's stream ended and every byte is in the file. Anything less removes the temp file.
   */
  async receive(
    pod: string,
    q: { dir: string; relay: string; client: RelayClient | undefined },
    signal: AbortSignal,
  ): Promise<{ temp: string; size: number }> {
    const client = needRelay(q.client);
    const { committer, ...received } = await this.receiveInto(pod, q.dir, client, q.relay, signal);
    committer.timer = setTimeout(() => void this.discard(pod, received.temp), VERDICT_WAIT_MS);
    committer.timer.unref();
    this.waiting.set(received.temp, committer);
    return received;
  }

  /** Put the received temp file (of exactly `size` bytes) in place as `path`, atomically. */
  async commit(
    pod: string,
    q: { temp: string; path: string; parent: string; size: number },
    signal?: AbortSignal,
  ): Promise<void> {
    const args = [q.temp, q.path, q.parent, String(q.size)];
    const r = await this.decide(pod, q.temp, ["commit", ...args], () =>
      runFileScript(this.exec, this.prefix, pod, COMMIT, args, { timeoutS: TRANSFER_TIMEOUT_S, signal }),
    );
    const what = `writing ${q.path}`;
    if (r.exitCode === EXIT.missing)
      throw new AgentError("conflict", `${what}: the received file is gone; upload it again`);
    if (r.exitCode === EXIT.isDir) throw new AgentError("bad_request", `path: ${q.path} is a directory`);
    if (r.exitCode === EXIT.notDir)
      throw new AgentError("bad_request", `path: ${q.parent} exists and is not a directory`);
    if (r.exitCode === EXIT.shortWrite)
      throw new AgentError("unavailable", `${what}: the upload was cut short; nothing was written`);
    if (r.exitCode !== 0) throw fileFailure(what, r.exitCode, r.stderr);
  }

  /** Remove a received temp file (best effort: one already gone is fine). */
  async discard(pod: string, temp: string): Promise<void> {
    await this.decide(pod, temp, ["discard", temp], () =>
      runFileScript(this.exec, this.prefix, pod, DISCARD, [temp], { timeoutS: 30 }),
    ).catch(() => undefined);
  }

  /** Tell the waiting committer, or (gone: the agent restarted, or it waited too long) run `fallback`. */
  private async decide(
    pod: string,
    temp: string,
    lines: string[],
    fallback: () => Promise<{ exitCode: number; stderr: string }>,
  ): Promise<{ exitCode: number; stderr: string }> {
    const committer = this.waiting.get(temp);
    if (!committer || committer.pod !== pod) return fallback();
    this.waiting.delete(temp);
    clearTimeout(committer.timer);
    const run = await committer.run.catch(() => null);
    if (!run) return fallback();
    run.stdout.resume();
    committer.verdict.end(`${lines.join("\n")}\n`);
    return run.done;
  }

  /** Remove what the receive script made (its first line of output), if it got that far. */
  private async removeTemp(pod: string, dir: string, output: string): Promise<void> {
    const temp = output.split("\n")[0] ?? "";
    if (temp.startsWith(`${dir}/${TEMP_PREFIX}`)) await this.discard(pod, temp);
  }

  /** A committer, started now so that its start-up overlaps the transfer. */
  private startCommitter(pod: string): Committer {
    const verdict = new PassThrough();
    const run = streamFileScript(this.exec, this.prefix, pod, COMMITTER, [], {
      timeoutS: TRANSFER_TIMEOUT_S + VERDICT_WAIT_MS / 1000,
      stdin: verdict,
    });
    run.then(
      (r) => r.stdout.resume(),
      () => undefined, // the receive fails alike; a commit then runs its own process
    );
    return { verdict, run, pod };
  }

  private async receiveInto(
    pod: string,
    dir: string,
    client: RelayClient,
    relay: string,
    signal: AbortSignal,
  ): Promise<{ temp: string; size: number; committer: Committer }> {
    // The host's curl fetches the relay's bytes (Node's HTTP client cost ~5× its CPU per byte),
    // started once the process is: through `runc exec` curl writes straight into the process's
    // stdin (its `inlet`), so neither runc nor this agent copies a byte, and bytes curl has before
    // the process reads wait in that pipe. Through the engine's exec curl's stdout is read here and
    // piped into the process's stdin (see ../transfer/relay.ts for why never the other way round).
    const run = await streamFileScript(this.exec, this.prefix, pod, RECEIVE, [dir], {
      timeoutS: TRANSFER_TIMEOUT_S + VERDICT_WAIT_MS / 1000,
      signal,
      inlet: true,
      fd3: true,
    });
    const incoming = client.pipe(relay, { signal, timeoutS: TRANSFER_TIMEOUT_S, into: run.inlet });
    if (incoming.body && run.stdin) pipeInto(incoming.body, run.stdin, run);
    // Without a verdict pipe (the engine's exec) a committer of its own, started during the transfer.
    const separate = run.fd3 ? undefined : this.startCommitter(pod);
    run.done.catch(() => separate?.verdict.end()); // a broken process: the receive fails (below)
    // "<temp>\n" once the temp file exists, then RECEIVED once `cat` read its stdin to the end, which
    // is when curl ended: whole only when curl says so (a cut transfer also ends its stdout). A script
    // that stopped early (the directory is a file) left bytes unread: curl is stopped, so the
    // caller's side learns of it rather than waits.
    const out = new CappedBytes(COLLECTED_BYTES);
    run.stdout.on("error", () => undefined);
    const marked = new Promise<null>((resolve) => {
      run.stdout.on("data", (chunk: Buffer) => {
        out.push(chunk);
        if (out.text().endsWith(`\n${RECEIVED}\n`)) resolve(null);
      });
    });
    const ended = await Promise.race([marked, run.done]);
    if (ended) incoming.stop();
    const fetched = await incoming.done.then(
      (r) => r,
      (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
    );
    const lines = out.text().split("\n");
    const temp = lines.length > 1 ? (lines[0] ?? "") : "";
    const what = `writing into ${dir}`;
    const failure =
      ended?.exitCode === EXIT.notDir
        ? new AgentError("bad_request", `path: ${dir} exists and is not a directory`)
        : ended
          ? fileFailure(what, ended.exitCode, ended.stderr)
          : fetched instanceof AgentError
            ? fetched
            : fetched instanceof Error
              ? new AgentError("unavailable", `${what}: the upload broke off; nothing was written`)
              : !temp.startsWith(`${dir}/${TEMP_PREFIX}`)
                ? new AgentError("internal", `${what}: the temp file's name did not come back`)
                : undefined;
    if (failure || fetched instanceof Error) {
      separate?.verdict.end(); // no verdict: it exits
      if (!ended && run.fd3) run.fd3.end(`discard\n${temp}\n`);
      else await this.removeTemp(pod, dir, temp);
      throw failure ?? fetched;
    }
    const committer = separate ?? { verdict: run.fd3 as Writable, run: Promise.resolve(run), pod };
    return { temp, size: fetched.size, committer };
  }
}

/**
 * `body` into the engine exec's stdin, ended with it; a failed `body` is not an end: the exec is
 * torn down, so the process never takes part of a file for the whole of it.
 */
function pipeInto(body: Readable, stdin: Writable, run: StreamedExec): void {
  stdin.on("error", () => undefined); // the process may exit without reading everything
  body.once("error", (err) => run.abort(err));
  body.pipe(stdin);
}
