#!/usr/bin/env bash
# Smoke test of the pod images: runs every preset exactly as the agent does (non-root, no
# capabilities, tini, named home volume, user-defined network) and checks the image
# contract from images/README.md. Talks only to its own containers. Cleans up after itself.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$ROOT/scripts/host/build-images.sh"

ID=podhost-smoke-$$
declare -A PORT=([static]=8080 [php]=8080 [nodejs]=3000 [python]=8000)
PRESETS=(static php nodejs python)
FAILED=0
ok()   { echo "ok   $*"; }
bad()  { echo "FAIL $*"; FAILED=$((FAILED + 1)); }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }
x()    { docker exec -u 1000:1000 "$ID-$1" bash -c "$2" </dev/null; }   # as the agent does
xi()   { docker exec -i -u 1000:1000 "$ID-$1" bash -c "$2"; }            # ... with stdin
ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$ID-$1"; }
now_ms() { date +%s%3N; }
# Poll until cmd succeeds (up to $1 seconds, 0.2 s steps).
until_ok() { local t=$(( $1 * 5 )); shift; while ! "$@" >/dev/null 2>&1; do
  t=$((t - 1)); [ $t -gt 0 ] || return 1; sleep 0.2; done; }
page() { curl -fsS --max-time 2 "http://$(ip_of "$1"):${PORT[$1]}/"; }
page_has() { page "$1" | grep -q "$2"; }

cleanup() {
  for p in "${PRESETS[@]}"; do docker rm -f "$ID-$p" >/dev/null 2>&1 || true
    docker volume rm "$ID-$p" >/dev/null 2>&1 || true; done
  docker network rm "$ID" >/dev/null 2>&1 || true
}
trap cleanup EXIT
docker network create "$ID" >/dev/null

run_pod() {
  docker run -d --name "$ID-$1" --network "$ID" --init --user 1000:1000 --cap-drop ALL \
    --security-opt no-new-privileges --pids-limit 256 --memory 512m \
    -v "$ID-$1:/home/pod_user" "podhost/$1" >/dev/null
}
for p in "${PRESETS[@]}"; do run_pod "$p"; done

# Cron first: a "* * * * *" line fires at the next minute boundary; checked at the end.
x static 'echo "* * * * * echo cron-ran >> ~/cron-test.txt" >> ~/.pod/crontab'

for p in "${PRESETS[@]}"; do
  check "$p: default page on :${PORT[$p]} says podhost" until_ok 20 page_has "$p" podhost
  check "$p: runs as 1000:1000" test "$(x "$p" 'echo $(id -u):$(id -g)')" = 1000:1000
  check "$p: tools (bash tar gzip git ps unzip sftp-server grep -P)" x "$p" \
    'for t in bash tar gzip git ps unzip find xargs curl; do command -v $t; done &&
     test -x /usr/lib/openssh/sftp-server && echo ab | grep -qP "a(?=b)"'
  check "$p: home seeded (logs, .ssh 700/600, .pod)" x "$p" \
    'cd ~ && for l in app web error build cron; do test -f logs/$l.log; done &&
     test "$(stat -c %a .ssh)" = 700 && test "$(stat -c %a .ssh/authorized_keys)" = 600 &&
     test -d .pod/workers && test "$(stat -c %u app)" = 1000'
done

# Bridge networking between containers on a user-defined network.
check "network: static pod reaches python pod by IP" \
  x static "curl -fsS --max-time 2 http://$(ip_of python):8000/ | grep -q podhost"

# Restart one service from docker exec; the pid must change and the page come back.
for p in "${PRESETS[@]}"; do
  svc=app; [ "${PORT[$p]}" = 8080 ] && svc=web
  before=$(x "$p" "sv status $svc" | grep -o 'pid [0-9]*' || true)
  x "$p" "sv restart $svc" >/dev/null || true
  after=$(x "$p" "sv status $svc" | grep -o 'pid [0-9]*' || true)
  check "$p: sv restart $svc (${before:-?} -> ${after:-?})" test -n "$after" -a "$before" != "$after"
  check "$p: page answers after restart" until_ok 10 page_has "$p" podhost
done
check "static: nginx access log in ~/logs/web.log" x static 'grep -q "GET / " ~/logs/web.log'

# .env: tricky quoted values reach the app; PORT stays the platform's.
xi python 'cat > ~/app/.env' <<'ENV'
# comment
export MULTI="line1
line2 \"quoted\" # not a comment = fine"
SINGLE='a#b=c "d"'
PLAIN=value # comment
PORT=9999
ENV
x python 'sv restart app' >/dev/null
check "python: app answers on 8000 although .env sets PORT" until_ok 10 page_has python podhost
envdump=$(x python 'pid=$(sv status app | grep -o "pid [0-9]*" | cut -d" " -f2); tr "\0" "\n" < /proc/$pid/environ')
check "python: .env multi-line value loaded" grep -qx 'line2 "quoted" # not a comment = fine' <<<"$envdump"
check "python: .env single-quoted value loaded" grep -qx "SINGLE=a#b=c \"d\"" <<<"$envdump"
check "python: .env unquoted value, comment stripped" grep -qx 'PLAIN=value' <<<"$envdump"

# Workers: a file in ~/.pod/workers becomes a supervised service after pod-reload.
x nodejs 'echo "echo worker-up >> ~/worker-test.txt; exec sleep 1000" > ~/.pod/workers/demo && pod-reload' >/dev/null
check "nodejs: worker started by pod-reload" until_ok 10 x nodejs 'grep -q worker-up ~/worker-test.txt'
x nodejs 'rm ~/.pod/workers/demo && pod-reload' >/dev/null
check "nodejs: worker removed by pod-reload" x nodejs '! test -e $SVDIR/worker-demo && ! pgrep -f "[s]leep 1000"'

# `npm start` wraps node in sh: a restart must not leave the old node holding the port.
xi nodejs 'cat > ~/app/package.json' <<<'{"name":"smoke","scripts":{"start":"node server.js"}}'
for _ in 1 2; do x nodejs 'sv restart app' >/dev/null; done
check "nodejs: npm start app answers after two restarts" until_ok 10 page_has nodejs podhost
check "nodejs: one node process, none orphaned by restarts" \
  test "$(x nodejs 'ps -o ppid= -C node | tr -d " "' | grep -vc '^1$')" = 1 -a \
       "$(x nodejs 'ps -o ppid= -C node | tr -d " "' | grep -c '^1$')" = 0
x nodejs 'rm ~/app/package.json'

# Node version switch: ~/.pod/node-version + restart app.
check "nodejs: default node is v20" test "$(x nodejs 'node --version' | cut -d. -f1)" = v20
check "nodejs: default page shows v20" page_has nodejs 'Node v20\.'
for v in 18 22 24; do
  x nodejs "echo $v > ~/.pod/node-version && sv restart app" >/dev/null
  check "nodejs: node --version is v$v after switch" test "$(x nodejs 'node --version' | cut -d. -f1)" = "v$v"
  check "nodejs: app runs on v$v after restart" until_ok 10 page_has nodejs "Node v$v\."
  check "nodejs: npm works on v$v" x nodejs 'npm --version'
done
x nodejs 'echo 20 > ~/.pod/node-version'

# docker stop must be fast (tini forwards TERM, pod-init stops the services).
for p in "${PRESETS[@]}"; do
  t0=$(now_ms); docker stop "$ID-$p" >/dev/null; dt=$(( $(now_ms) - t0 ))
  check "$p: docker stop took ${dt} ms (< 1000)" test "$dt" -lt 1000
done
# Volume persists across a new start; the supervisor tree is rebuilt.
docker start "$ID-static" >/dev/null
check "static: answers again after stop/start" until_ok 20 page_has static podhost
check "static: cron line ran (waits for the minute boundary)" until_ok 70 \
  x static 'grep -q cron-ran ~/cron-test.txt'

if [ "$FAILED" -gt 0 ]; then echo "smoke-images: $FAILED check(s) failed"; exit 1; fi
echo "smoke-images: all checks passed"
