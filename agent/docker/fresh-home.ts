import { constants } from "node:fs";
import { chmod, chown, lstat, mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import { AgentError } from "../errors";
import { type TarEntry, validTarPath } from "./tar";

/**
 * Write a new pod's spec files straight into its home volume's directory on the host, with the
 * owner and mode a `putArchive` would give them but without the engine's round trip (~60 ms of a
 * create on a busy host). Only for a volume this create made and the engine just seeded from the
 * image, before any process of the pod ran: what is in it is the image's own, so no path in it is
 * a tenant's symlink. A clone's or a staged home is tenant content and goes through `putArchive`,
 * which the engine confines. Belt and braces all the same: no existing component may be a symlink,
 * and files are opened with O_NOFOLLOW.
 */
export async function writeFreshHome(dir: string, entries: TarEntry[]): Promise<void> {
  for (const e of entries) {
    if (!validTarPath(e.path)) throw new AgentError("internal", `bad home path ${JSON.stringify(e.path)}`);
    await refuseSymlinks(dir, e.path);
    const target = join(dir, e.path);
    if (e.type === "dir") {
      await mkdir(target).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      await chmod(target, e.mode);
      await chown(target, e.uid, e.gid);
      continue;
    }
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
    const fh = await open(target, flags, e.mode);
    try {
      await fh.writeFile(e.content ?? "");
      await fh.chmod(e.mode);
      await fh.chown(e.uid, e.gid);
    } finally {
      await fh.close();
    }
  }
}

async function refuseSymlinks(dir: string, path: string): Promise<void> {
  let at = dir;
  for (const part of path.split("/")) {
    at = join(at, part);
    const st = await lstat(at).catch(() => null);
    if (!st) return; // the rest does not exist yet
    if (st.isSymbolicLink()) throw new AgentError("internal", `home path ${path} meets a symlink`);
  }
}
