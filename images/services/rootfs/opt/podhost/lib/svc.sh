# shellcheck shell=bash
# Shared by the service image scripts (/opt/podhost/bin/svc-*). One data dir per container:
# /var/lib/svc (a volume). Runtime files (sockets, pid files) in /run/svc (tmpfs). The server
# listens on 127.0.0.1 only; admin scripts talk to it over its unix socket in /run/svc, which
# only processes of this container can reach (the pod container shares the network namespace,
# not the mount namespace). No tenant text ever reaches these scripts: the only input is the
# password (a fixed charset, checked) and dump bytes (files/stdin, never shell strings).
set -euo pipefail
export PATH=/opt/pg/14/bin:/usr/lib/postgresql/15/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8 LC_ALL=C.UTF-8
umask 077

DATA=/var/lib/svc
RUN=/run/svc
MARK=$DATA/.svc-initialized
ETC=/opt/podhost/etc
PG_SOCK_DIR=$RUN
MY_CNF=$ETC/mariadb.cnf
REDIS_SOCK=$RUN/redis.sock
PROG=$(basename "$0")

die() { echo "$PROG: $*" | head -c 500 | tr '\n' ' ' >&2; echo >&2; exit 1; }
# One line of a log file as the reason of a failure: its first error-looking line, else its last.
die_log() {
  local l; l=$(grep -m 1 -iE 'error|fatal|fail|invalid|unexpected|wrong|denied' "$2" 2>/dev/null) \
    || l=$(grep -v '^\s*$' "$2" 2>/dev/null | tail -n 1)
  die "$1: $(echo "$l" | cut -c1-300)"
}

case "${SVC_TYPE:-}" in
  postgresql) PORT=5432 ;;
  mysql) PORT=3306 ;;
  redis) PORT=6379 ;;
  *) die "SVC_TYPE must be postgresql, mysql or redis" ;;
esac

# The password: one line on stdin, [A-Za-z0-9_-]{16,128} (never env or argv).
read_password() {
  local pw=""
  IFS= read -r -t 30 pw || true
  [[ $pw =~ ^[A-Za-z0-9_-]{16,128}$ ]] || die "password on stdin must be 16-128 chars of [A-Za-z0-9_-]"
  PASSWORD=$pw
}

# Polls "$@" until it succeeds, for up to $1 seconds.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# --- clients over the local socket (admin: no password needed there) ---------------------
pg_admin() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK_DIR" -p 5432 -U svc_admin "$@"; }
# svc@localhost: created by mariadb-install-db --auth-root-socket-user=svc, unix_socket only.
my_admin() { mariadb --defaults-file="$MY_CNF" -usvc "$@"; }
# redis-cli with AUTH sent as the first command on stdin (the password stays out of argv/env).
redis_cmd() {
  local pw; pw=$(sed -n 's/^requirepass //p' "$DATA/redis/redis.conf")
  { printf 'AUTH %s\n' "$pw"; printf '%s\n' "$@"; } | redis-cli -s "$REDIS_SOCK" 2>&1 | tail -n +2
}

svc_ready() {
  case "$SVC_TYPE" in
    postgresql) [ "$(pg_admin -d pod_user -Atc 'select 1' 2>/dev/null)" = 1 ] ;;
    mysql) my_admin -N -e 'select 1' pod_user >/dev/null 2>&1 ;;
    redis) [ "$(redis_cmd PING)" = PONG ] ;;
  esac
}

svc_version() {
  case "$SVC_TYPE" in
    postgresql) postgres --version | awk '{print $NF}' ;;
    mysql) mariadbd --version | sed -n 's/.*Ver \([0-9][0-9.]*\).*/\1/p' ;;
    redis) redis-server --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p' ;;
  esac
}
