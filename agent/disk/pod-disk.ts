import { lstat, readFile, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { PodLimits } from "../../shared/protocol";
import { BtrfsError, btrfs, parseQgroup, type Qgroup } from "./btrfs";

/** statfs(2)'s f_type of btrfs */
const BTRFS_SUPER_MAGIC = 0x9123683e;

/** a plan's "GB" is a GiB here, as in the API's disk-usage figures */
export const diskBytes = (limits: PodLimits) => limits.diskGb * 1024 ** 3;

/** what /sys/fs/btrfs/<fsid>/qgroups/mode reads under simple quotas */
const SIMPLE_QUOTA_MODE = "squota";

/**
 * Pods' homes with a hard size: each pod's home volume is a btrfs subvolume under one root (made by
 * scripts/host/ensure-pod-disk.sh, with simple quotas on), bound into the volume. The subvolume is
 * the one member the agent gives a level-1 qgroup `1/<its id>`, and that qgroup is limited to the
 * plan's disk. A write past it fails in the pod with EDQUOT ("Disk quota exceeded").
 *
 * Level 1 and not the subvolume's own qgroup because of nested subvolumes: a tenant can create a
 * subvolume (or a snapshot) inside its home without any capability, and under simple quotas such a
 * subvolume joins the level-1 qgroups of the one it is made in, so what it holds counts against the
 * same limit. The subvolume is named after the pod's volume (`<prefix>-<pod>-home`), which the
 * engine already keeps unique, so agents of different prefixes on one filesystem never meet; its
 * qgroups are named after the id btrfs gives it, so nothing has to be allocated or stored.
 */
export class PodDisk {
  constructor(readonly root: string) {}

  dirOf(volume: string): string {
    return join(this.root, volume);
  }

  /** Throws, saying what to do, unless the root is on btrfs with simple quotas on. */
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
    const mode = await this.quotaMode();
    if (mode !== SIMPLE_QUOTA_MODE)
      throw new Error(
        `PODHOST_POD_DISK_ROOT ${this.root} has quotas ${mode === null ? "off" : `in mode "${mode}"`}, ` +
          `not simple quotas (squota), without which a subvolume a tenant nests in its home has no limit: ${hint}`,
      );
  }

  /** The filesystem's quota mode ("squota", "qgroup"), null while quotas are off. */
  private async quotaMode(): Promise<string | null> {
    const shown = await btrfs(["filesystem", "show", this.root]);
    const uuid = /uuid: ([0-9a-f-]{36})/.exec(shown)?.[1];
    if (!uuid) throw new Error(`btrfs filesystem show ${this.root} names no uuid`);
    try {
      return (await readFile(`/sys/fs/btrfs/${uuid}/qgroups/mode`, "utf8")).trim();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
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
   * A new, empty subvolume for a volume the engine does not have yet, in its own limited level-1
   * qgroup. One left behind by an interrupted create or delete is somebody's old data: it goes first.
   */
  async create(volume: string, bytes: number): Promise<string> {
    await this.remove(volume);
    const dir = this.dirOf(volume);
    await btrfs(["subvolume", "create", dir]);
    const id = await this.subvolumeId(volume);
    await btrfs(["qgroup", "create", `1/${id}`, this.root]);
    await btrfs(["qgroup", "assign", `0/${id}`, `1/${id}`, this.root]);
    await btrfs(["qgroup", "limit", String(bytes), `1/${id}`, this.root]);
    return dir;
  }

  /**
   * A new, empty subvolume for a pod's other data (a database service's, agent/services/) charged to
   * the level-1 qgroup of the pod's home volume `owner`: the plan's one disk limit covers the home
   * and the databases together. A leftover of an interrupted create goes first.
   */
  async createMember(volume: string, owner: string): Promise<string> {
    await this.removeMember(volume, owner);
    const dir = this.dirOf(volume);
    await btrfs(["subvolume", "create", dir]);
    const id = await this.subvolumeId(volume);
    const ownerId = await this.subvolumeId(owner);
    await btrfs(["qgroup", "assign", `0/${id}`, `1/${ownerId}`, this.root]);
    return dir;
  }

  /** Undo createMember: out of the owner's qgroup (when the owner is still there), then deleted. */
  async removeMember(volume: string, owner: string): Promise<void> {
    if (!(await this.exists(volume))) return;
    const id = await this.subvolumeId(volume);
    if (await this.exists(owner)) {
      const ownerId = await this.subvolumeId(owner);
      const group = parseQgroup(await this.qgroups(), `1/${ownerId}`);
      if (group?.children.includes(`0/${id}`))
        await btrfs(["qgroup", "remove", `0/${id}`, `1/${ownerId}`, this.root]);
    }
    for (const nested of await this.nestedSubvolumes(volume)) {
      await btrfs(["subvolume", "delete", nested]);
    }
    await btrfs(["subvolume", "delete", this.dirOf(volume)]);
  }

  async setLimit(volume: string, bytes: number): Promise<void> {
    const id = await this.subvolumeId(volume);
    await btrfs(["qgroup", "limit", String(bytes), `1/${id}`, this.root]);
  }

  /**
   * The pod's level-1 qgroup: its home and every subvolume made inside it. Null for a volume with
   * no subvolume here (a pod made before limits).
   */
  async usage(volume: string): Promise<Qgroup | null> {
    if (!(await this.exists(volume))) return null;
    const id = await this.subvolumeId(volume);
    return parseQgroup(await this.qgroups(), `1/${id}`);
  }

  /**
   * Lift the limit, delete the subvolume and the ones a tenant may have made inside it (btrfs refuses
   * to delete a subvolume that holds others), then its level-1 qgroup: first its members (btrfs refuses to
   * destroy a qgroup that has some), then the qgroup. The members' own level-0 qgroups go by
   * themselves once their extents are freed. Absent: nothing to do.
   */
  async remove(volume: string): Promise<void> {
    if (!(await this.exists(volume))) return;
    const dir = this.dirOf(volume);
    const id = await this.subvolumeId(volume);
    // Deleting a subvolume takes a metadata reservation charged to the qgroup: at its limit (a
    // tenant who filled its disk), the delete fails with EDQUOT unless the limit goes first.
    const group = parseQgroup(await this.qgroups(), `1/${id}`);
    if (group) await btrfs(["qgroup", "limit", "none", `1/${id}`, this.root]);
    for (const nested of await this.nestedSubvolumes(volume)) {
      await btrfs(["subvolume", "delete", nested]);
    }
    await btrfs(["subvolume", "delete", dir]);
    const members = parseQgroup(await this.qgroups(), `1/${id}`);
    if (!members) return;
    for (const child of members.children) {
      // A member's level-0 qgroup goes by itself once its extents are freed, which may happen
      // between the listing and this call (seen deleting a few hundred pods' disks in a row).
      await btrfs(["qgroup", "remove", child, `1/${id}`, this.root]).catch((err: unknown) => {
        if (!(err instanceof BtrfsError && /No such file or directory/.test(err.stderr))) throw err;
      });
    }
    await btrfs(["qgroup", "destroy", `1/${id}`, this.root]);
  }

  private async subvolumeId(volume: string): Promise<number> {
    const id = Number((await btrfs(["inspect-internal", "rootid", this.dirOf(volume)])).trim());
    if (!Number.isSafeInteger(id) || id <= 5)
      throw new Error(`${this.dirOf(volume)} is not a pod's subvolume`);
    return id;
  }

  private qgroups(): Promise<string> {
    return btrfs(["qgroup", "show", "-pcre", "--raw", this.root]);
  }

  /**
   * Subvolumes anywhere below the volume's, deepest first. `subvolume list` of the root prints every
   * subvolume of the filesystem with its path from the top (`... path <volume>/a/b`); only paths
   * inside the volume's own are kept.
   */
  private async nestedSubvolumes(volume: string): Promise<string[]> {
    const out = await btrfs(["subvolume", "list", this.root]);
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
