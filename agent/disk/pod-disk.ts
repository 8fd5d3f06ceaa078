import { lstat, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { PodLimits } from "../../shared/protocol";
import { btrfs, parseQgroup, type Qgroup } from "./btrfs";

/** statfs(2)'s f_type of btrfs */
const BTRFS_SUPER_MAGIC = 0x9123683e;

/** a plan's "GB" is a GiB here, as in the API's disk-usage figures */
export const diskBytes = (limits: PodLimits) => limits.diskGb * 1024 ** 3;

/**
 * Pods' homes with a hard size: each pod's home volume is a btrfs subvolume under one root (made by
 * scripts/host/ensure-pod-disk.sh), bound into the volume, and its qgroup is limited to the plan's
 * disk. A write past it fails in the pod with EDQUOT ("Disk quota exceeded"). The subvolume is
 * named after the pod's volume (`<prefix>-<pod>-home`), which the engine already keeps unique, so
 * agents of different prefixes on one filesystem never meet and nothing has to be allocated.
 */
export class PodDisk {
  constructor(readonly root: string) {}

  dirOf(volume: string): string {
    return join(this.root, volume);
  }

  /** Throws, saying what to do, unless the root is on btrfs with quotas on. */
  async check(): Promise<void> {
    const hint =
      "run scripts/host/ensure-pod-disk.sh, or set PODHOST_POD_DISK_ROOT= to run without disk limits";
    let type: number;
    try {
      type = (await statfs(this.root)).type;
    } catch (err) {
      throw new Error(`PODHOST_POD_DISK_ROOT ${this.root} cannot be read (${String(err)}): ${hint}`);
    }
    if (type !== BTRFS_SUPER_MAGIC)
      throw new Error(`PODHOST_POD_DISK_ROOT ${this.root} is not on btrfs: ${hint}`);
    await btrfs(["qgroup", "show", this.root]).catch(() => {
      throw new Error(`PODHOST_POD_DISK_ROOT ${this.root} has quotas off (btrfs quota enable): ${hint}`);
    });
  }

  async exists(volume: string): Promise<boolean> {
    try {
      return (await lstat(this.dirOf(volume))).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
  }

  /**
   * A new, empty subvolume for a volume the engine does not have yet, already limited. One left
   * behind by an interrupted create or delete is somebody's old data: it goes first.
   */
  async create(volume: string, bytes: number): Promise<string> {
    await this.remove(volume);
    const dir = this.dirOf(volume);
    await btrfs(["subvolume", "create", dir]);
    await this.setLimit(volume, bytes);
    return dir;
  }

  async setLimit(volume: string, bytes: number): Promise<void> {
    await btrfs(["qgroup", "limit", String(bytes), this.dirOf(volume)]);
  }

  /** The volume's qgroup; null for a volume with no subvolume here (a pod made before limits). */
  async usage(volume: string): Promise<Qgroup | null> {
    if (!(await this.exists(volume))) return null;
    const dir = this.dirOf(volume);
    const id = Number((await btrfs(["inspect-internal", "rootid", dir])).trim());
    return parseQgroup(await btrfs(["qgroup", "show", "-re", "--raw", "-f", dir]), id);
  }

  /**
   * Delete the subvolume, and the ones a tenant may have made inside it (btrfs refuses to delete a
   * subvolume that holds others), then its qgroup. Absent: nothing to do.
   */
  async remove(volume: string): Promise<void> {
    if (!(await this.exists(volume))) return;
    const dir = this.dirOf(volume);
    const id = (await btrfs(["inspect-internal", "rootid", dir])).trim();
    for (const nested of await this.nestedSubvolumes(volume)) {
      await btrfs(["subvolume", "delete", nested]);
    }
    await btrfs(["subvolume", "delete", dir]);
    // Fails while the cleaner still frees the subvolume's extents; ensure-pod-disk.sh clears those.
    await btrfs(["qgroup", "destroy", `0/${id}`, this.root]).catch(() => undefined);
  }

  /**
   * Subvolumes below the volume's, deepest first. `subvolume list -o` prints paths from the top of
   * the filesystem (`... path <volume>/a/b`); only paths inside the volume's own are kept.
   */
  private async nestedSubvolumes(volume: string): Promise<string[]> {
    const out = await btrfs(["subvolume", "list", "-o", this.dirOf(volume)]);
    const inside = `${volume}/`;
    const paths: string[] = [];
    for (const line of out.split("\n")) {
      const at = line.indexOf(" path ");
      if (at < 0) continue;
      const rel = line.slice(at + " path ".length);
      if (rel.startsWith(inside) && !rel.split("/").includes("..")) paths.push(join(this.root, rel));
    }
    return paths.sort((a, b) => b.length - a.length);
  }
}

/** The agent's pod disk, or null where PODHOST_POD_DISK_ROOT is empty (homes without a limit). */
export const podDiskOf = (root: string | null): PodDisk | null => (root ? new PodDisk(root) : null);
