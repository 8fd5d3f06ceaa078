#!/usr/bin/env bash
# Debian's Chromium for the tests of what a person sees (the /docs reference page). Idempotent.
# Nothing downloads a browser of its own here: playwright-core drives this one.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
