import { fail, ok, type Result } from "../../../shared/errors";
import type { TeamCall } from "../context";
import { callPodHost } from "../pods/target";
import { podPathOf } from "./paths";

/** a recursive copy or delete of a large tree takes time; the host gives up at 120 s */
const TREE_TIMEOUT_MS = 150_000;
const MKDIR_TIMEOUT_MS = 30_000;

const missing = (path: string) => fail("not_found", `${path}: no such file or directory`);

/** `rm -rf` as pod_user; 404 when nothing is there. The roots and the app root are refused. */
export async function deletePodPath({
  ctx,
  teamId,
  input: { name, path: requested },
}: TeamCall<{ name: string; path: string }>): Promise<Result<{ status: "deleted"; path: string }>> {
  const path = podPathOf("path", requested);
  if (!path.ok) return path;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.files.delete",
    { name, path: path.value },
    { timeoutMs: TREE_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.found) return missing(path.value);
  return ok({ status: "deleted", path: path.value });
}

/**
 * Move `old_path` to `new_path` (409 if that exists; its parents are created), or copy it there
 * recursively. 404 when the source is missing; a destination inside the source is 400.
 */
export async function movePodPath({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; mode: "rename" | "copy"; from: string; to: string }>): Promise<
  Result<{ from: string; to: string }>
> {
  const { name, mode } = input;
  const [fromField, toField] = mode === "rename" ? ["old_path", "new_path"] : ["source_path", "dest_path"];
  const from = podPathOf(fromField, input.from);
  if (!from.ok) return from;
  const to = podPathOf(toField, input.to);
  if (!to.ok) return to;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    mode === "rename" ? "pod.files.rename" : "pod.files.copy",
    { name, from: from.value, to: to.value },
    { timeoutMs: TREE_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.found) return missing(from.value);
  return ok({ from: from.value, to: to.value });
}

/** `mkdir -p`: the whole tree; an existing directory is fine, an existing file is 409. */
export async function createPodFolder({
  ctx,
  teamId,
  input: { name, path: requested },
}: TeamCall<{ name: string; path: string }>): Promise<Result<{ status: "created"; path: string }>> {
  const path = podPathOf("path", requested);
  if (!path.ok) return path;
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.files.mkdir",
    { name, path: path.value },
    { timeoutMs: MKDIR_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  return ok({ status: "created", path: r.value.path });
}
