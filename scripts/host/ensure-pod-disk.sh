#!/usr/bin/env bash
# The filesystem pods' homes live on, so each home can carry its plan's disk as a hard limit:
# a btrfs image file, loop-mounted at PODHOST_POD_DISK_ROOT with quotas (qgroups) on. The agent
# makes one subvolume per pod there and limits its qgroup (agent/disk/). Idempotent: a mounted
# root is only checked; an existing image is mounted, never formatted again.
#
# Why btrfs and not XFS project quotas: kernels built without CONFIG_XFS_QUOTA (and ext4's quota
# without CONFIG_QFMT_V2) refuse the quota mount options; btrfs qgroups need nothing beyond btrfs.
# The image is sparse: it takes host disk as pods write. Size it to what the control plane is told
# the host has (hosts.disk_gb); pods on it together can never take more than that from the host.
set -euo pipefail

root="${PODHOST_POD_DISK_ROOT:-/var/lib/podhost/pod-disk}"
image="${PODHOST_POD_DISK_IMAGE:-/var/lib/podhost/pod-disk.img}"
size="${PODHOST_POD_DISK_SIZE:-64G}"

if ! command -v mkfs.btrfs >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  # Update the lists only when apt does not know the package yet (fresh machine).
  if ! apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null
  fi
fi

if ! mountpoint -q "$root"; then
  mkdir -p "$root" "$(dirname "$image")"
  if [ ! -e "$image" ]; then
    truncate -s "$size" "$image.new"
    mkfs.btrfs -q "$image.new" >/dev/null
    mv "$image.new" "$image" # a run interrupted mid-format leaves no half-made image behind
  fi
  # discard: blocks a deleted pod freed go back to the host (holes punched in the sparse image).
  mount -o loop,discard=async "$image" "$root"
fi

fstype="$(findmnt -n -o FSTYPE --mountpoint "$root")"
if [ "$fstype" != btrfs ]; then
  echo "ensure-pod-disk: $root is a $fstype mount, not the btrfs pods' disks need" >&2
  exit 1
fi
btrfs qgroup show "$root" >/dev/null 2>&1 || btrfs quota enable "$root"
# qgroups of deleted pods' subvolumes stay behind until cleared; harmless, but tidy up.
btrfs qgroup clear-stale "$root" >/dev/null 2>&1 || true
chmod 0711 "$root"
