#!/usr/bin/env bash
# Make the host tools the agent and its tests need available: an nginx binary (the agent
# runs its own instance with its own config, so the system service is never started),
# ssh/scp/sftp (openssh-client), GNU grep (tests use grep -P) and git. Idempotent.
set -euo pipefail

missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v ssh >/dev/null 2>&1 && command -v scp >/dev/null 2>&1 \
  && command -v sftp >/dev/null 2>&1 || missing+=(openssh-client)
echo x | grep -qP 'x' 2>/dev/null || missing+=(grep)
# jq: the README's curl session reads tokens with it.
command -v jq >/dev/null 2>&1 || missing+=(jq)
# rsync: the SSH tests sync files into pods with `rsync -e ssh`, as users do.
command -v rsync >/dev/null 2>&1 || missing+=(rsync)
# git: the agent fetches git deployments on the host (agent/git/fetch.ts); the tests' git server
# is `git http-backend`, which the git package ships.
command -v git >/dev/null 2>&1 || missing+=(git)
# curl: the agent fetches uploads from the control plane's relay with it (agent/transfer/relay.ts),
# the README's first-pod session and .ci/run's start smoke test; ss and ip (iproute2):
# `npm start` names the process holding a taken port, and the egress tests make network namespaces.
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v ss >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0

export DEBIAN_FRONTEND=noninteractive
# policy-rc.d exit 101: the nginx package's postinst must not start the system nginx
# (port 80, root) -- only the binary is wanted. Removed again right after.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
# Update the lists only when apt does not know the packages yet (fresh machine).
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
