import { AgentError } from "../errors";
import { listDirectory } from "../files/list";
import { parentOf, podPath, refuseInside, refuseProtected } from "../files/paths";
import { FileReceiver, TEMP_PREFIX } from "../files/receive";
import { downloadFile } from "../files/transfer";
import { treeOps } from "../files/tree";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { HandlerTable } from "./types";

type FileOps =
  | "pod.files.list"
  | "pod.files.download"
  | "pod.files.receive"
  | "pod.files.commit"
  | "pod.files.discard"
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
  const prefix = deps.config.namePrefix;
  const exec = podStreams(deps);
  const writes = new FileReceiver(exec, prefix);

  return {
    "pod.files.list": guard("pod.files.list", ({ name, path }, ctx) =>
      listDirectory(exec, prefix, name, podPath("path", path), ctx.signal),
    ),

    "pod.files.download": guard("pod.files.download", ({ name, path, relay, maxBytes }, ctx) =>
      downloadFile(
        exec,
        prefix,
        name,
        { path: podPath("path", path), relay, maxBytes, client: deps.relay },
        ctx.signal,
      ),
    ),

    "pod.files.receive": guard("pod.files.receive", ({ name, dir, relay }, ctx) =>
      writes.receive(name, { dir: podPath("path", dir), relay, client: deps.relay }, ctx.signal),
    ),

    "pod.files.commit": guard("pod.files.commit", async ({ name, temp, path, size }, ctx) => {
      const file = podPath("path", path);
      await writes.commit(
        name,
        { temp: receivedTemp(temp), path: file, parent: parentOf(file), size },
        ctx.signal,
      );
      return { path: file };
    }),

    "pod.files.discard": guard("pod.files.discard", async ({ name, temp }) => {
      await writes.discard(name, receivedTemp(temp));
      return {};
    }),

    "pod.files.delete": guard("pod.files.delete", ({ name, path }, ctx) => {
      const target = podPath("path", path);
      refuseProtected("path", target);
      return treeOps(exec, prefix, name, ctx.signal).remove(target);
    }),

    "pod.files.rename": guard("pod.files.rename", ({ name, from, to }, ctx) => {
      const source = podPath("old_path", from);
      const dest = podPath("new_path", to);
      refuseProtected("old_path", source);
      refuseInside("new_path", source, dest);
      return treeOps(exec, prefix, name, ctx.signal).rename({
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
      return treeOps(exec, prefix, name, ctx.signal).copy({
        from: source,
        to: dest,
        parent: parentOf(dest),
        toField: "dest_path",
      });
    }),

    "pod.files.mkdir": guard("pod.files.mkdir", async ({ name, path }, ctx) => {
      const dir = podPath("path", path);
      await treeOps(exec, prefix, name, ctx.signal).mkdir(dir);
      return { path: dir };
    }),
  };
}

/** Only what `receive` made may be committed or discarded: a checked path named `.upload-*`. */
function receivedTemp(temp: string): string {
  const path = podPath("temp", temp);
  if (!path.slice(path.lastIndexOf("/") + 1).startsWith(TEMP_PREFIX))
    throw new AgentError("bad_request", `temp: ${temp} is not a received upload`);
  return path;
}
