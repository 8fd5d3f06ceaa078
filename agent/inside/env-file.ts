import { ENV_FILE } from "../../shared/protocol/inside";
import type { DockerClient } from "../docker/client";
import { SH } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { AgentError } from "../errors";

/**
 * The app's `~/app/.env`, read and written as pod_user in the pod's own view of its home (see
 * runAsPodUser: works whether or not the pod runs). The scripts are fixed strings; content travels
 * on stdin and stdout only.
 */

/** small enough that its parsed vars fit a result even as escaped JSON (see ./budget.ts) */
export const MAX_ENV_FILE_BYTES = 256 * 1024;
const NO_FILE = 3;

// `-f` refuses a FIFO or directory at the path (the user controls the home); `head -c` a huge file.
const READ = `f=${ENV_FILE}; [ -e "$f" ] || exit ${NO_FILE}; [ -f "$f" ] || { echo "$f is not a regular file" >&2; exit 1; }
exec timeout 5 head -c ${MAX_ENV_FILE_BYTES + 1} -- "$f"`;

// A temp file beside the old one, renamed over it: the app's loader reads the old or the new file,
// never half of one. `mv` replaces a symlink at the path rather than writing through it.
const WRITE = `set -eu
umask 077
d=$(dirname ${ENV_FILE})
mkdir -p "$d"
t=$(mktemp "$d/.env.XXXXXX")
trap 'rm -f "$t"' EXIT
cat >"$t"
chmod 600 "$t"
mv -f "$t" ${ENV_FILE}
trap - EXIT`;

export async function readEnvFile(
  docker: DockerClient,
  prefix: string,
  pod: string,
): Promise<{ exists: boolean; text: string }> {
  const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", READ], { timeoutMs: 15_000 });
  if (r.exitCode === NO_FILE) return { exists: false, text: "" };
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `reading ${ENV_FILE} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
  if (Buffer.byteLength(r.stdout) > MAX_ENV_FILE_BYTES) {
    throw new AgentError(
      "conflict",
      `${ENV_FILE} of pod ${pod} is larger than ${MAX_ENV_FILE_BYTES / 1024} KiB; edit it over SSH`,
    );
  }
  return { exists: true, text: r.stdout };
}

export async function writeEnvFile(docker: DockerClient, prefix: string, pod: string, text: string) {
  if (Buffer.byteLength(text) > MAX_ENV_FILE_BYTES) {
    throw new AgentError("bad_request", `vars: ${ENV_FILE} would exceed ${MAX_ENV_FILE_BYTES / 1024} KiB`);
  }
  const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", WRITE], { stdin: text, timeoutMs: 15_000 });
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `writing ${ENV_FILE} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
}
