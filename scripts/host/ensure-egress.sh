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
# REJECT, not DROP: a tenant's app sees "no route to host" at once instead of hanging to its timeout.
# The agent runs this script again when it starts and when its periodic check finds a jump missing
# (a reboot or a firewall reload wipes the rules; dockerd's restart keeps DOCKER-USER's content).
# Pass bridge names (br-<12 hex>) of pod networks made before bridges were named: they get the
# same jumps. Safe to run concurrently (flock).
set -euo pipefail

for bridge in "$@"; do
  [[ "$bridge" =~ ^br-[0-9a-f]{12}$ ]] || { echo "ensure-egress: not a bridge name: $bridge" >&2; exit 2; }
done

command -v iptables >/dev/null 2>&1 || { echo "ensure-egress: iptables is missing" >&2; exit 1; }

exec 9>/run/podhost-egress.lock
flock 9

reject4=(-j REJECT --reject-with icmp-admin-prohibited)
reject6=(-j REJECT --reject-with icmp6-adm-prohibited)

iptables-restore -w --noflush <<EOF
*filter
:PODHOST-HOST - [0:0]
:PODHOST-EGRESS - [0:0]
-A PODHOST-HOST -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
-A PODHOST-HOST ${reject4[*]}
-A PODHOST-EGRESS -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
-A PODHOST-EGRESS -o phb+ ${reject4[*]}
-A PODHOST-EGRESS -d 169.254.0.0/16 ${reject4[*]}
-A PODHOST-EGRESS -d 10.0.0.0/8 ${reject4[*]}
-A PODHOST-EGRESS -d 172.16.0.0/12 ${reject4[*]}
-A PODHOST-EGRESS -d 192.168.0.0/16 ${reject4[*]}
-A PODHOST-EGRESS -d 100.64.0.0/10 ${reject4[*]}
-A PODHOST-EGRESS -j RETURN
COMMIT
EOF

# One jump per (chain, interface), at the top, added only when missing.
jump() { # <iptables> <from chain> <interface> <to chain>
  "$1" -w -C "$2" -i "$3" -j "$4" 2>/dev/null || "$1" -w -I "$2" 1 -i "$3" -j "$4"
}

# dockerd makes DOCKER-USER at its start; without it (engine never started) FORWARD is used.
forward=DOCKER-USER
iptables -w -S DOCKER-USER >/dev/null 2>&1 || forward=FORWARD
for ifname in phb+ "$@"; do
  jump iptables INPUT "$ifname" PODHOST-HOST
  jump iptables "$forward" "$ifname" PODHOST-EGRESS
done

# IPv6: pod networks are IPv4-only today, but a pod's interface has a link-local address and
# could reach the host's services over the bridge's fe80:: address. Same shape; ULA and
# link-local are the private ranges. Docker 20.10 keeps no ip6tables chains: jump from FORWARD.
if command -v ip6tables >/dev/null 2>&1 && [ -e /proc/net/if_inet6 ] && ip6tables -w -S INPUT >/dev/null 2>&1; then
  ip6tables-restore -w --noflush <<EOF
*filter
:PODHOST-HOST - [0:0]
:PODHOST-EGRESS - [0:0]
-A PODHOST-HOST -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
-A PODHOST-HOST ${reject6[*]}
-A PODHOST-EGRESS -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
-A PODHOST-EGRESS -o phb+ ${reject6[*]}
-A PODHOST-EGRESS -d fc00::/7 ${reject6[*]}
-A PODHOST-EGRESS -d fe80::/10 ${reject6[*]}
-A PODHOST-EGRESS -j RETURN
COMMIT
EOF
  forward6=DOCKER-USER
  ip6tables -w -S DOCKER-USER >/dev/null 2>&1 || forward6=FORWARD
  for ifname in phb+ "$@"; do
    jump ip6tables INPUT "$ifname" PODHOST-HOST
    jump ip6tables "$forward6" "$ifname" PODHOST-EGRESS
  done
fi
