#!/usr/bin/env bash
# Pod egress rules (docs/security.md, "What a pod can reach"). Idempotent and atomic: our own
# chains are replaced whole with `iptables-restore --noflush` (declaring a chain there empties it),
# and each is jumped to once, only from interfaces named `phb…` (every pod bridge the agent makes,
# agent/docker/naming.ts). Docker's own chains are never touched beyond that one jump.
#
#   PODHOST-HOST    pod -> an address of this host (bridge gateway, any local address): INPUT.
#                   Only replies (ingress, SSH gateway traffic the host started) are let through.
#   PODHOST-EGRESS  pod -> another machine: FORWARD, via DOCKER-USER. Link-local (cloud metadata),
#                   RFC 1918, CGNAT 100.64/10 -- which also holds every other pod -- are refused;
#                   another pod's bridge is refused whatever its range;
#                   the rest (the public internet: package installs) goes on to Docker's rules.
#
# REJECT, not DROP: a tenant's app sees "connection refused" at once instead of hanging to its
# timeout. The agent runs this script again when it starts and when its periodic check finds a rule
# missing (a reboot or a firewall reload wipes them; dockerd never edits DOCKER-USER once it exists).
# Pass bridge names (br-<12 hex>) of pod networks made before bridges were named: they get the
# same jumps. Safe to run concurrently (flock).
set -euo pipefail

# The ingress opens a connection to a pod per request: on a busy host tens of thousands of them sit
# in TIME_WAIT, and every connect() to any pod then searches the ephemeral ports in the kernel (a
# busy pod slowed its neighbours 4x, test/e2e/hostile-tenant.test.ts). Reusing a TIME_WAIT port for
# a new outgoing connection (timestamps keep it safe) ends that search; Linux's default (2) does it
# for loopback only.
sysctl -qw net.ipv4.tcp_tw_reuse=1

for bridge in "$@"; do
  [[ "$bridge" =~ ^br-[0-9a-f]{12}$ ]] || { echo "ensure-egress: not a bridge name: $bridge" >&2; exit 2; }
done

command -v iptables >/dev/null 2>&1 || { echo "ensure-egress: iptables is missing" >&2; exit 1; }

exec 9>/run/podhost-egress.lock
flock 9

# Refuse: TCP with a reset (the kernel sends ICMP errors to one peer about once a second, so a
# second attempt would wait for its SYN to be sent again), anything else with ICMP.
refuse() { # <4|6> <rule match...>
  local icmp=icmp-admin-prohibited
  [ "$1" = 6 ] && icmp=icmp6-adm-prohibited
  shift
  echo "$* -p tcp -j REJECT --reject-with tcp-reset"
  echo "$* -j REJECT --reject-with $icmp"
}

# <4|6> <private range...>: the filter table's part for one family, for *-restore --noflush
chains() {
  local family=$1 range
  shift
  echo "*filter"
  echo ":PODHOST-HOST - [0:0]"
  echo ":PODHOST-EGRESS - [0:0]"
  echo "-A PODHOST-HOST -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"
  refuse "$family" -A PODHOST-HOST
  echo "-A PODHOST-EGRESS -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"
  refuse "$family" -A PODHOST-EGRESS -o phb+
  for range in "$@"; do refuse "$family" -A PODHOST-EGRESS -d "$range"; done
  echo "-A PODHOST-EGRESS -j RETURN"
  echo "COMMIT"
}

# One jump per (chain, interface), at the top, added only when missing.
jump() { # <iptables> <from chain> <interface> <to chain>
  "$1" -w -C "$2" -i "$3" -j "$4" 2>/dev/null || "$1" -w -I "$2" 1 -i "$3" -j "$4"
}

# <iptables> <bridge...>: jumps from INPUT and from DOCKER-USER (FORWARD where the engine keeps no
# DOCKER-USER: never started, or IPv6 on Docker 20.10)
jumps() {
  local cmd=$1 forward=DOCKER-USER ifname
  shift
  "$cmd" -w -S DOCKER-USER >/dev/null 2>&1 || forward=FORWARD
  for ifname in phb+ "$@"; do
    jump "$cmd" INPUT "$ifname" PODHOST-HOST
    jump "$cmd" "$forward" "$ifname" PODHOST-EGRESS
  done
}

chains 4 169.254.0.0/16 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10 | iptables-restore -w --noflush
jumps iptables "$@"

# IPv6: pod networks are IPv4-only and Docker disables IPv6 inside their containers. Should a pod
# ever get an address (a link-local one would reach the host over the bridge's fe80::), the same
# fence holds, with ULA and link-local as the private ranges.
if command -v ip6tables >/dev/null 2>&1 && [ -e /proc/net/if_inet6 ] && ip6tables -w -S INPUT >/dev/null 2>&1; then
  chains 6 fc00::/7 fe80::/10 | ip6tables-restore -w --noflush
  jumps ip6tables "$@"
fi
