import { listDirectory } from "../files/list";
import { parentOf, podPath, refuseInside, refuseProtected } from "../files/paths";
import { downloadFile, uploadFile } from "../files/transfer";
import { treeOps } from "../files/tree";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { HandlerTable } from "./types";

type FileOps =
  | "pod.files.list"
  | "pod.files.download"
  | "pod.files.upload"
  | "pod.files.delete"
  | "pod.files.rename"
  | "pod.files.copy"
  | "pod.files.mkdir";

/**
 * The Files endpoints on the host (see agent/files/). Every path is checked again here. No pod
 * lock is taken: these are the user's own edits, as concurrent as a shell's, and a long upload
 * must not hold up a stop.
 */
export function fileHandlers(deps: HandlerDeps): Pick<HandlerTable, FileOps> {
  const { docker } = deps;
  const prefix = deps.config.namePrefix;

  return {
    "pod.files.list": guard("pod.files.list", ({ name, path }, ctx) =>
      listDirectory(docker, prefix, name, podPath("path", path), ctx.signal),
    ),

    "pod.files.download": guard("pod.files.download", ({ name, path, relay, maxBytes }, ctx) =>
      downloadFile(
        docker,
        prefix,
        name,
        { path: podPath("path", path), relay, maxBytes, client: deps.relay },
        ctx.signal,
      ),
    ),

    "pod.files.upload": guard("pod.files.upload", async ({ name, path, relay, size }, ctx) => {
      const file = podPath("path", path);
      await uploadFile(
        docker,
        prefix,
        name,
        { path: file, parent: parentOf(file), relay, size, client: deps.relay },
        ctx.signal,
      );
      return { path: file };
    }),

    "pod.files.delete": guard("pod.files.delete", ({ name, path }, ctx) => {
      const target = podPath("path", path);
      refuseProtected("path", target);
      return treeOps(docker, prefix, name, ctx.signal).remove(target);
    }),

    "pod.files.rename": guard("pod.files.rename", ({ name, from, to }, ctx) => {
      const source = podPath("old_path", from);
      const dest = podPath("new_path", to);
      refuseProtected("old_path", source);
      refuseInside("new_path", source, dest);
      return treeOps(docker, prefix, name, ctx.signal).rename({
        from: source,
        to: dest,
        parent: parentOf(dest),
        toField: "new_path",
      });
    }),

    "pod.files.copy": guard("pod.files.copy", ({ name, from, to }, ctx) => {
      const source = podPath("source_path", from);
      const dest = podPath("dest_path", to);
      refuseInside("dest_path", source, dest);
      return treeOps(docker, prefix, name, ctx.signal).copy({
        from: source,
        to: dest,
        parent: parentOf(dest),
        toField: "dest_path",
      });
    }),

    "pod.files.mkdir": guard("pod.files.mkdir", async ({ name, path }, ctx) => {
      const dir = podPath("path", path);
      await treeOps(docker, prefix, name, ctx.signal).mkdir(dir);
      return { path: dir };
    }),
  };
}
