import { readdir } from "node:fs/promises";
import { loadConfig } from "../../agent/config";
import { PodDisk } from "../../agent/disk/pod-disk";

/** The pod disk every test agent uses: the host's default, made by scripts/host/ensure-pod-disk.sh. */
export const testPodDisk = (): PodDisk => {
  const root = loadConfig({}).podDiskRoot;
  if (!root) throw new Error("the agent's default PODHOST_POD_DISK_ROOT is empty");
  return new PodDisk(root);
};

/** Delete the home subvolumes of one name prefix (`<prefix>-<pod>-home`), whatever a test left. */
export async function removePodDisks(prefix: string): Promise<void> {
  const disk = testPodDisk();
  for (const entry of await readdir(disk.root)) {
    if (entry.startsWith(`${prefix}-`)) await disk.remove(entry);
  }
}

/**
 * The btrfs ioctls a tenant could make subvolumes with (the images have python3, not btrfs):
 * BTRFS_IOC_SUBVOL_CREATE and SNAP_CREATE take `{__s64 fd; char name[4088]}`, their _V2 forms
 * `{__s64 fd; __u64 transid, flags; __u64 unused[4]; char name[4040]}`, where a caller may pass an
 * explicit, empty qgroup list and so escape the pod's limit. Prints each one's errno.
 */
export const SUBVOLUME_IOCTLS = `import errno, fcntl, os, struct
fd = os.open(os.path.expanduser("~"), os.O_RDONLY)
v1 = lambda name, src=0: bytearray(struct.pack("q", src) + name.encode().ljust(4088, b"\\0"))
v2 = lambda name, src=0: bytearray(struct.pack("qQQ", src, 0, 0) + bytes(32) + name.encode().ljust(4040, b"\\0"))
for label, request, buf in (("create", 0x5000940E, v1("nested")), ("create_v2", 0x50009418, v2("escape")),
                            ("snapshot", 0x50009401, v1("snap", fd)), ("snapshot_v2", 0x50009417, v2("snap2", fd))):
    try:
        fcntl.ioctl(fd, request, buf, True)
        print(label, "made")
    except OSError as e:
        print(label, errno.errorcode[e.errno])`;
