import { FILE_LIST_MAX_ENTRIES, type FileEntry } from "../../shared/protocol/files";
import type { StreamExecutor } from "../docker/exec-stream";
import { AgentError } from "../errors";
import { RESULT_BUDGET_BYTES } from "../inside/budget";
import { EXIT, fileFailure, runFileScript } from "./run";

/**
 * A directory's entries in one `find` as pod_user: NUL-terminated records of ls-style mode, size,
 * type after following symlinks, and the name last (a name may hold tabs or newlines). `-H`
 * follows the directory itself when it is a symlink; entries are never followed, except that
 * `%Y` tells whether a symlink points to a directory (so `is_dir` is true for it, and its
 * permissions still start with `l`). A missing directory (or a dangling link) is `found: false`.
 */
const LIST = `d=$1
[ -e "$d" ] || exit ${EXIT.missing}
[ -d "$d" ] || exit ${EXIT.notDir}
exec find -H "$d" -mindepth 1 -maxdepth 1 -printf '%M\\t%s\\t%Y\\t%f\\0'`;

const LIST_TIMEOUT_S = 30;

export async function listDirectory(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  path: string,
  signal?: AbortSignal,
): Promise<{ found: boolean; entries: FileEntry[] }> {
  const r = await runFileScript(exec, prefix, pod, LIST, [path], { timeoutS: LIST_TIMEOUT_S, signal });
  if (r.exitCode === EXIT.missing) return { found: false, entries: [] };
  if (r.exitCode === EXIT.notDir) throw new AgentError("bad_request", `path: ${path} is not a directory`);
  if (r.exitCode !== 0) throw fileFailure(`listing ${path}`, r.exitCode, r.stderr);
  const entries = parseListing(r.stdout);
  // One result frame carries the listing: too many entries (or too long names) is a clear 400.
  const tooMany =
    r.omitted > 0 ||
    entries.length > FILE_LIST_MAX_ENTRIES ||
    Buffer.byteLength(JSON.stringify(entries)) > RESULT_BUDGET_BYTES;
  if (tooMany) {
    throw new AgentError(
      "bad_request",
      `path: ${path} has more than ${FILE_LIST_MAX_ENTRIES} entries; list it with the command runner (ls) or over SSH`,
    );
  }
  return { found: true, entries };
}

/** find's records, directories first, then by name (code unit order, stable across locales). */
export function parseListing(out: string): FileEntry[] {
  const entries: FileEntry[] = [];
  for (const record of out.split("\0")) {
    if (record === "") continue;
    const [permissions = "", size = "0", type = "", ...rest] = record.split("\t");
    entries.push({ name: rest.join("\t"), permissions, size: Number(size) || 0, isDir: type === "d" });
  }
  return entries.sort((a, b) =>
    a.isDir !== b.isDir ? (a.isDir ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
}
