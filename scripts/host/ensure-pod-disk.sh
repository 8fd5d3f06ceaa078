#!/usr/bin/env bash
# The filesystem pods' homes live on, so each home can carry its plan's disk as a hard limit:
# a btrfs image file, loop-mounted at PODHOST_POD_DISK_ROOT with *simple* quotas (squota) on. The
# agent makes one subvolume per pod there, puts it in a level-1 qgroup `1/<its id>` and limits that
# (agent/disk/). Idempotent: a mounted root is only checked; an existing image is mounted, never
# formatted again.
#
# Why simple quotas and not full qgroups: under squota a subvolume created inside another joins the
# level-1 qgroups its parent belongs to, so a subvolume (or snapshot) a tenant makes in its home
# counts against the pod's limit; under full qgroups it got a qgroup of its own, with no limit.
# btrfs-progs 6.2 (Debian bookworm) has no `quota enable --simple`: the ioctl does it (python3).
#
# Why btrfs and not XFS project quotas: kernels built without CONFIG_XFS_QUOTA (and ext4's quota
# without CONFIG_QFMT_V2) refuse the quota mount options; btrfs qgroups need nothing beyond btrfs.
# The image is sparse: it takes host disk as pods write. Size it to what the control plane is told
# the host has (hosts.disk_gb); pods on it together can never take more than that from the host.
set -euo pipefail

root="${PODHOST_POD_DISK_ROOT:-/var/lib/podhost/pod-disk}"
image="${PODHOST_POD_DISK_IMAGE:-/var/lib/podhost/pod-disk.img}"
size="${PODHOST_POD_DISK_SIZE:-64G}"

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  # Update the lists only when apt does not know the package yet (fresh machine).
  if ! apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$1" >/dev/null
  fi
}
command -v mkfs.btrfs >/dev/null 2>&1 || apt_install btrfs-progs
# The system's python3, by path: a pyenv shim or a venv earlier in PATH is not wanted here.
[ -x /usr/bin/python3 ] || apt_install python3-minimal

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

# The quota mode: /sys/fs/btrfs/<fsid>/qgroups/mode reads "squota" or "qgroup"; the file is absent
# while quotas are off.
uuid="$(btrfs filesystem show "$root" | sed -n 's/.*uuid: \([0-9a-f-]*\).*/\1/p' | head -1)"
mode() { cat "/sys/fs/btrfs/$uuid/qgroups/mode" 2>/dev/null || echo off; }

enable_simple_quotas() {
  # BTRFS_IOC_QUOTA_CTL with cmd BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA (4), on the filesystem's top.
  /usr/bin/python3 -I -c '
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.ioctl(fd, 0xC0109428, bytearray(struct.pack("QQ", 4, 0)))
' "$root"
}

current="$(mode)"
if [ "$current" != squota ]; then
  # Simple quotas count only extents written after they come on, and pods' homes made before would
  # have no level-1 qgroup: switching is only safe while the filesystem holds no subvolume.
  subvolumes="$(btrfs subvolume list "$root" | wc -l)"
  if [ "$subvolumes" -ne 0 ]; then
    cat >&2 <<EOF
ensure-pod-disk: $root has quotas in mode "$current", not the simple quotas (squota) pods' disks
need, and already holds $subvolumes subvolume(s) (pods' homes): switching now would leave their data
uncounted and their nested subvolumes unlimited. Either delete those pods (on a development
machine, their leftover subvolumes: btrfs subvolume list $root) and run this script again, or
stop the agent and its pods, unmount $root, move $image away and run this script again for a
fresh filesystem (then recreate the pods).
EOF
    exit 1
  fi
  [ "$current" = off ] || btrfs quota disable "$root"
  enable_simple_quotas
  current="$(mode)"
  if [ "$current" != squota ]; then
    echo "ensure-pod-disk: simple quotas did not come on at $root (mode: $current)" >&2
    exit 1
  fi
fi

# Under squota the level-0 qgroup of a deleted subvolume goes by itself once its extents are freed.
# A level-1 qgroup whose subvolume is gone (a delete interrupted between the two) stays: destroy
# those. One whose subvolume exists may be one the agent is setting up right now: left alone.
existing=" $(btrfs subvolume list "$root" | awk '{printf "%s ", $2}')"
btrfs qgroup show -c --raw "$root" | awk '$1 ~ /^1\// && $4 == "-" {print $1}' |
  while read -r qgroup; do
    case "$existing" in *" ${qgroup#1/} "*) continue ;; esac
    btrfs qgroup destroy "$qgroup" "$root" >/dev/null 2>&1 || true
  done
chmod 0711 "$root"
