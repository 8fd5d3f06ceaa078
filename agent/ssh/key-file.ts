import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { SH } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { AgentError } from "../errors";
import { runFileScript } from "../files/run";
import { MAX_AUTHORIZED_KEYS_BYTES } from "./authorized-keys";

/**
 * The pod's `~/.ssh/authorized_keys`, read and written as pod_user inside the pod's own view of
 * its home (see runAsPodUser). The scripts are fixed strings; the content travels on stdin.
 */

const DIR = `${HOME}/.ssh`;
const FILE = `${DIR}/authorized_keys`;

// `timeout` because the user may have made the path a FIFO; `head -c` because it may be huge.
const READ = `f=${FILE}; [ -e "$f" ] || exit 0; exec timeout 5 head -c ${MAX_AUTHORIZED_KEYS_BYTES + 1} -- "$f"`;

// A temp file in the same directory renamed over the old one: a concurrent login reads the old or
// the new file, never half of one. `mv` replaces a symlink at the path, not what it points to.
const WRITE = `set -eu
umask 077
mkdir -p ${DIR}
chmod 700 ${DIR}
t=$(mktemp ${DIR}/.authorized_keys.XXXXXX)
trap 'rm -f "$t"' EXIT
cat >"$t"
chmod 600 "$t"
mv -f "$t" ${FILE}
trap - EXIT`;

/**
 * The gateway's read (key-cache.ts): the file's identity first — device, inode, size, mtime and
 * ctime to the nanosecond, of what the path resolves to — and the file only when that differs from
 * `$1`, the identity of the copy the agent holds ("=" then). "absent" when there is no file.
 */
const READ_IF_CHANGED = `f=${FILE}; s=absent
if [ -e "$f" ]; then s=$(stat -L -c '%d:%i:%s:%.9Y:%.9Z' -- "$f") || exit 1; fi
[ "$s" = "$1" ] && { echo =; exit 0; }
echo "$s"
[ "$s" = absent ] && exit 0
exec head -c ${MAX_AUTHORIZED_KEYS_BYTES + 1} -- "$f"`;

export interface KeyFileText {
  text: string;
  /** the file is larger than the agent reads: `text` is its head, cut after the last full line */
  truncated: boolean;
}

const readFailed = (pod: string, stderr: string) =>
  new AgentError("internal", `reading ${FILE} of pod ${pod} failed: ${stderr.trim().slice(0, 300)}`);

function capped(text: string): KeyFileText {
  if (Buffer.byteLength(text) <= MAX_AUTHORIZED_KEYS_BYTES) return { text, truncated: false };
  return { text: text.slice(0, text.lastIndexOf("\n") + 1), truncated: true };
}

/** The file, running pod or not (`exec`: how to reach a running one; see runAsPodUser). */
export async function readKeyFile(
  docker: DockerClient,
  prefix: string,
  pod: string,
  exec?: StreamExecutor,
): Promise<KeyFileText> {
  const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", READ], { timeoutMs: 10_000, exec });
  if (r.exitCode !== 0) throw readFailed(pod, r.stderr);
  return capped(r.stdout);
}

export type KeyFileCheck = { changed: false } | { changed: true; identity: string; file: KeyFileText };

/**
 * The file of a running pod if its identity is not `known` (null: read it whatever it is). One
 * process in the pod either way; a stopped pod fails with files/run.ts's NOT_RUNNING.
 */
export async function readKeyFileIfChanged(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  known: string | null,
): Promise<KeyFileCheck> {
  const r = await runFileScript(exec, prefix, pod, READ_IF_CHANGED, [known ?? ""], { timeoutS: 5 });
  if (r.exitCode !== 0) throw readFailed(pod, r.stderr);
  const nl = r.stdout.indexOf("\n");
  const identity = nl < 0 ? r.stdout : r.stdout.slice(0, nl);
  if (identity === "=") return { changed: false };
  return { changed: true, identity, file: capped(nl < 0 ? "" : r.stdout.slice(nl + 1)) };
}

export async function writeKeyFile(
  docker: DockerClient,
  prefix: string,
  pod: string,
  text: string,
  exec?: StreamExecutor,
) {
  if (Buffer.byteLength(text) > MAX_AUTHORIZED_KEYS_BYTES) {
    throw new AgentError("bad_request", `${FILE} would exceed ${MAX_AUTHORIZED_KEYS_BYTES / 1024} KiB`);
  }
  const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", WRITE], {
    stdin: text,
    timeoutMs: 10_000,
    exec,
  });
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `writing ${FILE} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
}
