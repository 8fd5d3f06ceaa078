#!/usr/bin/env bash
# Make sure a Docker engine answers on this host. Idempotent: reuses a running engine.
# Works without systemd (CI / containers-in-VM): dockerd is started detached with setsid.
set -euo pipefail

LOG=/var/log/podhost-dockerd.log
TIMEOUT=${DOCKER_START_TIMEOUT:-60}

# Fast path: an engine already answers (ours, or one the machine provides).
if docker info >/dev/null 2>&1; then
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! command -v dockerd >/dev/null 2>&1; then
  # Only Debian apt is reachable here; docker.io brings dockerd, containerd, runc, tini
  # (docker-init, needed for `--init`) and iptables.
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null
fi

# dockerd programs NAT/filter rules for bridge networks. On some kernels the nf_tables
# backend of iptables fails (missing nft modules / mixed legacy rules), which breaks
# container networking; prefer whichever backend actually works here.
if command -v update-alternatives >/dev/null 2>&1 && [ -x /usr/sbin/iptables-legacy ]; then
  if ! iptables -t nat -L -n >/dev/null 2>&1 && iptables-legacy -t nat -L -n >/dev/null 2>&1; then
    update-alternatives --set iptables /usr/sbin/iptables-legacy >/dev/null
    update-alternatives --set ip6tables /usr/sbin/ip6tables-legacy >/dev/null || true
  fi
fi

# Every pod gets its own bridge network; Docker's default address pools allow only ~30 of them.
# Carve /26s out of one /16 instead: 1,024 pod networks of 62 addresses each. A pod network holds
# the pod, a deploy's build and candidate containers and the gateway (database sidecars share the
# pod's own address); /24s (256 networks) capped an idle host of static pods below what its memory
# holds (bench/density.ts: ~300 on 24 GiB). Written before the engine starts: an engine already
# running keeps its settings until its next start, and a daemon.json we did not write is left
# alone. The /24 version this script wrote before is replaced (the engine is not running here).
OLD_POOLS='{ "base": "10.201.0.0/16", "size": 24 }'
if [ -f /etc/docker/daemon.json ] && [ "$(grep -c . /etc/docker/daemon.json)" = 6 ] &&
  grep -qF "$OLD_POOLS" /etc/docker/daemon.json && grep -qF '"base": "172.17.0.0/16", "size": 16' /etc/docker/daemon.json; then
  rm -f /etc/docker/daemon.json
fi
if [ ! -f /etc/docker/daemon.json ]; then
  mkdir -p /etc/docker
  cat >/etc/docker/daemon.json <<'JSON'
{
  "default-address-pools": [
    { "base": "172.17.0.0/16", "size": 16 },
    { "base": "10.201.0.0/16", "size": 26 }
  ]
}
JSON
fi

# A stale pidfile from a killed engine makes dockerd refuse to start.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  rm -f /var/run/docker.pid
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  # setsid + nohup: detached from our session, so it survives the calling shell/CI step.
  setsid nohup dockerd >>"$LOG" 2>&1 </dev/null &
fi

for _ in $(seq "$TIMEOUT"); do
  if docker info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 1
done
echo "ensure-docker: dockerd did not answer within ${TIMEOUT}s; last log lines:" >&2
tail -n 30 "$LOG" >&2 || true
exit 1
