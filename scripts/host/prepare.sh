#!/usr/bin/env bash
# Everything the tests and `npm start` need from this machine, installed or built when missing:
# the Docker engine, the pod egress rules, nginx and the CLI tools, the pods' disk (a btrfs with
# quotas), the agent's Node, the pod images, the database service images, and Chromium. Idempotent, ~1 s when all is
# there. Runs before `npm test` (npm's pretest) and, with --no-browser, at every `npm start`
# (scripts/start.ts): running the service needs all of it but Chromium, which only tests drive.
set -euo pipefail
here="$(dirname "$0")"
browser=1
for arg in "$@"; do
  case "$arg" in
    --no-browser) browser=0 ;;
    *) echo "prepare.sh: unknown option $arg (known: --no-browser)" >&2; exit 2 ;;
  esac
done
bash "$here/ensure-docker.sh"
# after the engine: the rules jump from its DOCKER-USER chain
bash "$here/ensure-egress.sh"
bash "$here/ensure-nginx.sh"
bash "$here/ensure-pod-disk.sh"
# the agent's Node (22 LTS) when the machine's is older; vitest and wrangler keep the machine's
bash "$here/ensure-agent-node.sh" >/dev/null
bash "$here/build-images.sh"
bash "$here/build-service-images.sh"
if [ "$browser" = 1 ]; then bash "$here/ensure-browser.sh"; fi
