/**
 * A full disk, told by what the tools say ("Disk quota exceeded" is EDQUOT, "No space left on
 * device" ENOSPC) and named for the caller: the pod's own disk (its plan's limit, a quota the tenant
 * can free space under) or the disk it is on. Plain substring checks (no regex over tool output).
 */
export type FullDisk = "quota" | "device";

export function fullDisk(text: string): FullDisk | null {
  const t = text.toLowerCase();
  if (t.includes("disk quota exceeded")) return "quota";
  if (t.includes("no space left on device")) return "device";
  return null;
}

/** What a full disk means for a write into the pod's home (its files, a backup's spool). */
export function fullDiskReason(kind: FullDisk): string {
  return kind === "quota"
    ? "the pod's disk is full (its plan's disk limit): delete files or move to a bigger plan"
    : "the host's disk is full (no space left on the device the pod's files are on)";
}

/**
 * What a full disk means for a write by the Docker engine, told by the path in its words. A local
 * volume's data is `<engine root>/volumes/<name>/_data`, where a pod's home is bound (the pods'
 * disk); any other path is under the engine's own root (image and container layers, its records of
 * containers, volumes and networks), often a disk of its own, which no tenant can free.
 */
export function engineFullDiskReason(kind: FullDisk, engineWords: string): string {
  if (kind === "quota" || engineWords.includes("/_data")) return fullDiskReason(kind);
  return "the engine's disk is full (no space left where the host keeps images and containers)";
}

/**
 * `reason` led by the full disk it tells of, if it tells of one: "the pod's disk is full …: <reason>".
 * Other reasons are returned as they are.
 */
export function namingFullDisk(reason: string): string {
  const kind = fullDisk(reason);
  return kind ? `${fullDiskReason(kind)}: ${reason}` : reason;
}

/**
 * A shell line for right after a `tar -x` into the directory `dir` (a shell word, e.g. `"$s"`)
 * failed. GNU tar tells a short write as "Wrote only N of M bytes", without the reason, so a full
 * disk went by in tar's words. One more MiB written there gets the kernel's own words onto stderr
 * ("Disk quota exceeded", "No space left on device"), which `fullDisk` reads. It writes nothing
 * when there is room, and leaves no file.
 */
export const sayWhyTarFailed = (dir: string) =>
  `/usr/bin/head -c 1048576 /dev/zero > ${dir}/.podhost-room || true; rm -f ${dir}/.podhost-room`;
