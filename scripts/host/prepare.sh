#!/usr/bin/env bash
# Everything the tests and `npm start` need from this machine, installed or built when missing:
# the Docker engine, the pod egress rules, nginx and the CLI tools, the pods' disk (a btrfs with
# quotas), the pod images, the database service images, and Chromium. Idempotent, ~1 s when all is there. Runs before `npm test`
# (npm's pretest) and from .ci/run.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/ensure-docker.sh"
# after the engine: the rules jump from its DOCKER-USER chain
bash "$here/ensure-egress.sh"
bash "$here/ensure-nginx.sh"
bash "$here/ensure-pod-disk.sh"
bash "$here/build-images.sh"
bash "$here/build-service-images.sh"
bash "$here/ensure-browser.sh"
