import { ok, type Result } from "../../../shared/errors";
import type { TeamCall } from "../context";
import { callPodHost } from "../pods/target";
import { APP_ROOT, podPathOf } from "./paths";

const LIST_TIMEOUT_MS = 45_000;

/** The spec's File entry. `size` is a decimal string of bytes (the spec types it as a string). */
export interface FileEntryView {
  name: string;
  permissions: string;
  size: string;
  is_dir: boolean;
}

/**
 * A directory of a running pod as pod_user sees it: directories first, then by name. A missing
 * directory is an empty list (spec); a path that is not a directory is 400. No (or an empty) path
 * is the app root.
 */
export async function listPodFiles({
  ctx,
  teamId,
  input: { name, path: requested },
}: TeamCall<{ name: string; path?: string }>): Promise<Result<{ path: string; files: FileEntryView[] }>> {
  const path = podPathOf("path", requested || APP_ROOT);
  if (!path.ok) return path;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.files.list",
    { name, path: path.value },
    { timeoutMs: LIST_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  return ok({
    path: path.value,
    files: r.value.entries.map((e) => ({
      name: e.name,
      permissions: e.permissions,
      size: String(e.size),
      is_dir: e.isDir,
    })),
  });
}
