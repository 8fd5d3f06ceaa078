import type { StreamExecutor } from "../docker/exec-stream";
import { AgentError } from "../errors";
import { EXIT, fileFailure, runFileScript } from "./run";

/**
 * Delete, rename, copy and mkdir as pod_user. Each checks in the pod what it needs to report
 * (missing source, existing destination) and then `exec`s one coreutils tool with `--` before
 * the paths. Symlinks are never followed by these: `rm` removes the link, `mv` moves it, `cp -P`
 * copies it as a link.
 */

const TREE_TIMEOUT_S = 120;

const DELETE = `p=$1
[ -e "$p" ] || [ -L "$p" ] || exit ${EXIT.missing}
exec rm -rf -- "$p"`;

// Both need a source and no destination; the destination's parents are created.
const PREPARE = `a=$1 b=$2 d=$3
[ -e "$a" ] || [ -L "$a" ] || exit ${EXIT.missing}
if [ -e "$b" ] || [ -L "$b" ]; then exit ${EXIT.exists}; fi
if [ -e "$d" ] && [ ! -d "$d" ]; then exit ${EXIT.notDir}; fi
mkdir -p -- "$d" || exit 1`;
const RENAME = `${PREPARE}
exec mv -T -- "$a" "$b"`;
const COPY = `${PREPARE}
exec cp -RPT --preserve=mode,timestamps -- "$a" "$b"`;

const MKDIR = `p=$1
if [ -e "$p" ] && [ ! -d "$p" ]; then exit ${EXIT.exists}; fi
exec mkdir -p -- "$p"`;

/** `toField` names the destination in messages (new_path, dest_path) */
export interface Move {
  from: string;
  to: string;
  parent: string;
  toField: string;
}

type Run = (script: string, args: string[]) => ReturnType<typeof runFileScript>;

export function treeOps(exec: StreamExecutor, prefix: string, pod: string, signal?: AbortSignal) {
  const run: Run = (script, args) =>
    runFileScript(exec, prefix, pod, script, args, { timeoutS: TREE_TIMEOUT_S, signal });

  const moveOrCopy = async (verb: "renaming" | "copying", q: Move) => {
    const r = await run(verb === "renaming" ? RENAME : COPY, [q.from, q.to, q.parent]);
    if (r.exitCode === EXIT.missing) return { found: false };
    if (r.exitCode === EXIT.exists) throw new AgentError("conflict", `${q.toField}: ${q.to} already exists`);
    if (r.exitCode === EXIT.notDir)
      throw new AgentError("bad_request", `${q.toField}: ${q.parent} exists and is not a directory`);
    if (r.exitCode !== 0) throw fileFailure(`${verb} ${q.from}`, r.exitCode, r.stderr);
    return { found: true };
  };

  return {
    async remove(path: string): Promise<{ found: boolean }> {
      const r = await run(DELETE, [path]);
      if (r.exitCode === EXIT.missing) return { found: false };
      if (r.exitCode !== 0) throw fileFailure(`deleting ${path}`, r.exitCode, r.stderr);
      return { found: true };
    },
    rename: (q: Move) => moveOrCopy("renaming", q),
    copy: (q: Move) => moveOrCopy("copying", q),
    async mkdir(path: string): Promise<void> {
      const r = await run(MKDIR, [path]);
      if (r.exitCode === EXIT.exists)
        throw new AgentError("conflict", `path: ${path} exists and is not a directory`);
      if (r.exitCode !== 0) throw fileFailure(`creating ${path}`, r.exitCode, r.stderr);
    },
  };
}
