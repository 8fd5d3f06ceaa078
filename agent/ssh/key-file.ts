import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";
import { runAsPodUser } from "../docker/pod-user";
import { AgentError } from "../errors";
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

export interface KeyFileText {
  text: string;
  /** the file is larger than the agent reads: `text` is its head, cut after the last full line */
  truncated: boolean;
}

export async function readKeyFile(docker: DockerClient, prefix: string, pod: string): Promise<KeyFileText> {
  const r = await runAsPodUser(docker, prefix, pod, ["sh", "-c", READ], { timeoutMs: 10_000 });
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `reading ${FILE} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
  if (Buffer.byteLength(r.stdout) <= MAX_AUTHORIZED_KEYS_BYTES) return { text: r.stdout, truncated: false };
  return { text: r.stdout.slice(0, r.stdout.lastIndexOf("\n") + 1), truncated: true };
}

export async function writeKeyFile(docker: DockerClient, prefix: string, pod: string, text: string) {
  if (Buffer.byteLength(text) > MAX_AUTHORIZED_KEYS_BYTES) {
    throw new AgentError("bad_request", `${FILE} would exceed ${MAX_AUTHORIZED_KEYS_BYTES / 1024} KiB`);
  }
  const r = await runAsPodUser(docker, prefix, pod, ["sh", "-c", WRITE], { stdin: text, timeoutMs: 10_000 });
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `writing ${FILE} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
}
