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
