#!/usr/bin/env bash
# Smoke test of the service images (images/README.md "Service images"): for each type, a pod
# container and a sidecar sharing its network namespace, run as the agent runs them (uid 1000,
# no capabilities, read-only rootfs, tmpfs /run/svc and /tmp, a data volume). Checks svc-init,
# a client reaching 127.0.0.1:<port> with the password from another container in the same
# netns, svc-dump, svc-load, svc-verify (also of a truncated dump) and a restart keeping data.
# Talks only to its own containers and cleans up after itself. Usage: smoke-service-images.sh [type...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$ROOT/scripts/host/build-service-images.sh"
declare -A TAG=(
  [postgresql]=${PODHOST_SERVICE_IMAGE_POSTGRESQL:-podhost/postgresql:14}
  [mysql]=${PODHOST_SERVICE_IMAGE_MYSQL:-podhost/mariadb:10.11}
  [redis]=${PODHOST_SERVICE_IMAGE_REDIS:-podhost/redis:7}
)
TYPES=("$@"); [ ${#TYPES[@]} -gt 0 ] || TYPES=(postgresql mysql redis)
ID=podhost-svcsmoke-$$
PW=Smoke$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
FAILED=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; FAILED=$((FAILED + 1)); }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }
now_ms() { date +%s%3N; }
until_ok() { local i; for i in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1; }
SEC=(--user 1000:1000 --cap-drop ALL --security-opt no-new-privileges --pids-limit 256 --init)

cleanup() {
  for t in "${TYPES[@]}"; do
    docker rm -f "$ID-$t" "$ID-$t-pod" >/dev/null 2>&1 || true
    docker volume rm "$ID-$t" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT

sidecar() {  # $1 = type
  docker run -d --name "$ID-$1" --network "container:$ID-$1-pod" "${SEC[@]}" --memory 256m \
    --read-only --tmpfs /run/svc:size=16m,mode=700,uid=1000,gid=1000 \
    --tmpfs /tmp:size=64m,mode=1777 -v "$ID-$1:/var/lib/svc" "${TAG[$1]}" >/dev/null
}
# A client in the pod's network namespace (the service image has the clients).
client() {  # $1 = type, stdin = SQL / redis commands
  local t=$1
  case "$t" in
    postgresql) docker run --rm -i --network "container:$ID-$t-pod" "${SEC[@]}" "${TAG[$t]}" \
      bash -c 'read -r pw; PGPASSWORD=$pw psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U pod_user -d pod_user' ;;
    mysql) docker run --rm -i --network "container:$ID-$t-pod" "${SEC[@]}" "${TAG[$t]}" \
      bash -c 'read -r pw; MYSQL_PWD=$pw mariadb --no-defaults --skip-ssl -N -h 127.0.0.1 -P 3306 -u pod_user pod_user' ;;
    redis) docker run --rm -i --network "container:$ID-$t-pod" "${SEC[@]}" "${TAG[$t]}" \
      bash -c 'read -r pw; REDISCLI_AUTH=$pw redis-cli --no-auth-warning -h 127.0.0.1 -p 6379' ;;
  esac
}
write_sql() { case "$1" in
  postgresql|mysql) printf '%s\n' "$PW" "create table t (id int primary key, v text);" \
    "insert into t values (1, 'one'), (2, 'two');" ;;
  redis) printf '%s\n' "$PW" "SET k1 one" "SET k2 two" ;; esac; }
read_sql() { case "$1" in
  postgresql|mysql) printf '%s\n' "$PW" "select count(*) from t;" ;;
  redis) printf '%s\n' "$PW" "DBSIZE" ;; esac; }
change_sql() { case "$1" in
  postgresql|mysql) printf '%s\n' "$PW" "insert into t values (3, 'three');" ;;
  redis) printf '%s\n' "$PW" "SET k3 three" ;; esac; }
count_is() { [ "$(read_sql "$1" | client "$1" | tail -n 1)" = "$2" ]; }

for t in "${TYPES[@]}"; do
  docker run -d --name "$ID-$t-pod" "${SEC[@]}" podhost/static >/dev/null
  t0=$(now_ms)
  sidecar "$t"
  if v=$(echo "$PW" | docker exec -i "$ID-$t" svc-init 2>&1); then
    ok "$t: svc-init -> version $v in $(( $(now_ms) - t0 )) ms (docker run + init + ready)"
  else bad "$t: svc-init: $v"; continue; fi
  check "$t: wrong password refused over TCP" bash -c "! { printf '%s\n' wrongpassword0000 'select 1;' | client $t | grep -qx 1; }"
  [ "$t" != redis ] || check "$t: wrong password refused" bash -c "! printf '%s\n' wrongpassword0000 DBSIZE | client redis | grep -qx 0"
  check "$t: write rows over 127.0.0.1 with the password" bash -c "$(declare -f write_sql client); ID=$ID PW=$PW; $(declare -p SEC TAG); write_sql $t | client $t"
  check "$t: read them back" count_is "$t" 2
  docker exec "$ID-$t" svc-dump >"/tmp/$ID-$t.dump" 2>/tmp/$ID.err && ok "$t: svc-dump ($(stat -c %s "/tmp/$ID-$t.dump") bytes)" || bad "$t: svc-dump $(cat /tmp/$ID.err)"
  change_sql "$t" | client "$t" >/dev/null
  check "$t: changed (3 rows/keys)" count_is "$t" 3
  docker exec -i "$ID-$t" svc-load <"/tmp/$ID-$t.dump" 2>/tmp/$ID.err && ok "$t: svc-load" || bad "$t: svc-load $(cat /tmp/$ID.err)"
  check "$t: after svc-load the service serves the dump's data (2)" count_is "$t" 2
  vrun() { docker run --rm -i --network none --read-only "${SEC[@]}" --memory 256m \
    --tmpfs /run/svc:size=16m,mode=700,uid=1000,gid=1000 --tmpfs /tmp:size=256m,mode=1777 \
    "${TAG[$t]}" svc-verify; }
  out=$(vrun <"/tmp/$ID-$t.dump" 2>&1) && ok "$t: svc-verify: $out" || bad "$t: svc-verify: $out"
  head -c $(( $(stat -c %s "/tmp/$ID-$t.dump") * 2 / 3 )) "/tmp/$ID-$t.dump" >"/tmp/$ID-$t.cut"
  out=$(vrun <"/tmp/$ID-$t.cut" 2>&1) && bad "$t: svc-verify accepted a truncated dump" || ok "$t: svc-verify refuses a truncated dump: $out"
  out=$(docker exec -i "$ID-$t" svc-load <"/tmp/$ID-$t.cut" 2>&1) && bad "$t: svc-load accepted a truncated dump" || ok "$t: svc-load refuses a truncated dump: $out"
  check "$t: ... and the data is untouched (2)" count_is "$t" 2
  docker restart -t 10 "$ID-$t-pod" >/dev/null; docker restart -t 10 "$ID-$t" >/dev/null
  check "$t: restart keeps the data" until_ok count_is "$t" 2
  check "$t: runs as uid 1000" test "$(docker exec "$ID-$t" id -u)" = 1000
  rm -f "/tmp/$ID-$t.dump" "/tmp/$ID-$t.cut"
done
rm -f "/tmp/$ID.err"
echo "$FAILED failed"
[ "$FAILED" = 0 ]
