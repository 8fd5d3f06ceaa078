#!/usr/bin/env bash
# The README's first command, checked as a newcomer would use it (.ci/run runs this after `npm test`,
# whose own host preparation could otherwise hide what `npm start` lacks):
#   `npm start` until it says Ready → an account and a static pod through the API (the README's
#   "Your first pod" curl session) → the pod's page through the edge → the pod deleted → Ctrl-C,
#   which must exit 0 and leave nothing listening on the API's or the ingress's port.
# Exits non-zero, with npm start's output, at the first step that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-8787}
API=http://localhost:$PORT
INGRESS=${PODHOST_INGRESS_LISTEN:-127.0.0.1:8080}
INGRESS_PORT=${INGRESS##*:}
READY_TIMEOUT_S=${SMOKE_READY_TIMEOUT_S:-900}
log=$(mktemp)
pod=smoke-$RANDOM

# its own session and process group, as a terminal would run it: Ctrl-C is a SIGINT to that group
setsid npm start >"$log" 2>&1 &
group=$!
started=1

say() { printf '\033[1msmoke-start: %s\033[0m\n' "$*"; }
die() {
  say "FAILED: $*"
  echo "---- npm start's output ----"
  tail -n 80 "$log"
  if [ "$started" = 1 ]; then kill -INT -- "-$group" 2>/dev/null || true; sleep 5; kill -KILL -- "-$group" 2>/dev/null || true; fi
  exit 1
}

say "waiting for npm start to say Ready (up to ${READY_TIMEOUT_S} s)"
for ((i = 0; i < READY_TIMEOUT_S; i++)); do
  grep -q '^Ready\.' "$log" && break
  kill -0 "$group" 2>/dev/null || { started=0; die "npm start exited before Ready"; }
  sleep 1
done
grep -q '^Ready\.' "$log" || die "no Ready within ${READY_TIMEOUT_S} s"
say "Ready after ${i} s"

# the README's curl session, step by step
TOKEN=$(curl -fsS "$API/api/auth/register" -H 'content-type: application/json' \
  -d "{\"email\":\"smoke-$RANDOM$RANDOM@example.com\",\"password\":\"correct horse battery\",\"name\":\"Smoke\"}" | jq -r .token) ||
  die "register failed"
[ -n "$TOKEN" ] && [ "$TOKEN" != null ] || die "register answered no token"
auth=(-H "authorization: Bearer $TOKEN")
code=$(curl -sS -o /dev/null -w '%{http_code}' "$API/api/pods" "${auth[@]}" -H 'content-type: application/json' \
  -d "{\"name\":\"$pod\",\"preset\":\"static\"}")
[ "$code" = 202 ] || die "POST /api/pods answered $code, not 202"

status=""
for ((i = 0; i < 120; i++)); do
  status=$(curl -fsS "$API/api/pods/$pod" "${auth[@]}" | jq -r .status) || status=""
  [ "$status" = running ] && break
  [ "$status" = failed ] && die "the pod failed"
  sleep 1
done
[ "$status" = running ] || die "the pod is '$status' after 120 s, not running"
say "pod $pod running"

# the dashboard, as the Ready line says: sign-in signed out, then the pods list with the pod in it
grep -q "Open the dashboard: $API/app" "$log" || die "the Ready lines do not name the dashboard"
curl -fsS "$API/app/sign-in" | grep -q 'data-api="/api/auth/login"' || die "the dashboard's sign-in page did not answer"
curl -fsS "$API/app" -H "cookie: pod_session=$TOKEN" | grep -q ">$pod</a>" || die "the dashboard's pods list does not show $pod"
say "the dashboard lists the pod"

# through the edge by its name, as the README says (curl resolves *.localhost to loopback); the
# host's ingress answers only the edge (docs/edge.md): straight to it, a visitor gets 403
page=$(curl -fsS "http://$pod.pods.localhost:$PORT/") || die "the pod's page did not answer through the edge"
grep -q 'Your static pod is running' <<<"$page" || die "the pod's page is not the static start page: $page"
say "the pod's page answers through the edge"
around=$(curl -sS -o /dev/null -w '%{http_code}' "http://$pod.pods.localhost:$INGRESS_PORT/")
[ "$around" = 403 ] || die "the ingress answered $around to a request around the edge, not 403"
say "the ingress refuses a request around the edge"

code=$(curl -sS -o /dev/null -w '%{http_code}' -X DELETE "$API/api/pods/$pod" "${auth[@]}")
case "$code" in 200 | 202 | 204) ;; *) die "DELETE answered $code" ;; esac
after=$(curl -sS "$API/api/pods/$pod" "${auth[@]}" | jq -r '.status // .error')
case "$after" in deleted | *"not found"*) ;; *) die "after DELETE the pod reads '$after'" ;; esac
say "pod deleted"

say "Ctrl-C"
kill -INT -- "-$group"
rc=0
for ((i = 0; i < 30; i++)); do kill -0 "$group" 2>/dev/null || break; sleep 1; done
kill -0 "$group" 2>/dev/null && die "npm start still runs 30 s after Ctrl-C"
wait "$group" || rc=$?
started=0
[ "$rc" = 0 ] || [ "$rc" = 130 ] || die "npm start exited with $rc after Ctrl-C"
for port in "$PORT" "$INGRESS_PORT"; do
  holder=$(ss -Hltnp "sport = :$port" || true)
  [ -z "$holder" ] || die "port $port is still held after Ctrl-C: $holder"
done
say "passed"
