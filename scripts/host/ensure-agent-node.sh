#!/usr/bin/env bash
# The Node the agent runs on (docs/hosts.md, "The agent's Node"): an LTS of at least AGENT_NODE_MAJOR
# (22; Node 20 reached its end of life in April 2026). Prints the path of that node binary on stdout:
# the machine's own `node` when it is new enough, otherwise node-linux-<arch> of the version
# images/base/node-versions pins for that major, taken from the npm registry as the pod images take
# theirs (scripts/host/build-images.sh; the same tarball cache, $PODHOST_CACHE/npm) and unpacked once
# into $PODHOST_CACHE/agent-node/v<version>/bin/node. Idempotent: when it is there, a run only looks
# (no network, nothing written). Only the agent runs on it: vitest and wrangler keep the machine's Node.
# Runs in scripts/host/prepare.sh; scripts/build-agent.ts's agentCommand() asks it for the path.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${PODHOST_CACHE:-/var/cache/podhost}
MAJOR=${AGENT_NODE_MAJOR:-22}
log() { echo "ensure-agent-node: $*" >&2; }

# the machine's node, if it is of MAJOR or later
if own=$(command -v node 2>/dev/null); then
  v=$("$own" --version 2>/dev/null || true)
  if [[ $v =~ ^v([0-9]+)\. ]] && ((BASH_REMATCH[1] >= MAJOR)); then
    echo "$own"
    exit 0
  fi
fi

version=$(awk -v m="$MAJOR" '$1 == m { print $2 }' "$ROOT/images/base/node-versions")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { log "no Node $MAJOR in images/base/node-versions"; exit 1; }
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) log "no node-linux build for $(uname -m)"; exit 1 ;;
esac
dir=$CACHE/agent-node/v$version
node=$dir/bin/node
installed() { [ -x "$node" ] && [ "$("$node" --version 2>/dev/null)" = "v$version" ]; }
if installed; then
  echo "$node"
  exit 0
fi

mkdir -p "$CACHE/npm" "$CACHE/agent-node"
# one install at a time (prepare.sh and a test run may start together); whoever waited looks again
exec 9>"$CACHE/agent-node/.lock"
flock 9
if installed; then
  echo "$node"
  exit 0
fi
pkg=node-linux-$arch@$version
tgz=$CACHE/npm/node-linux-$arch-$version.tgz
if [ ! -s "$tgz" ]; then
  log "fetching $pkg from the npm registry"
  (cd "$CACHE/npm" && npm pack --silent "$pkg" >/dev/null) || { log "npm pack $pkg failed"; exit 1; }
fi
# unpacked beside its final place, then renamed: an interrupted run never leaves half a binary there
tmp=$(mktemp -d "$CACHE/agent-node/.v$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
tar -xzf "$tgz" -C "$tmp" --strip-components=1 package/bin/node
chmod 755 "$tmp/bin/node"
[ "$("$tmp/bin/node" --version)" = "v$version" ] || { log "$tgz does not hold node v$version"; exit 1; }
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "installed node v$version for the agent: $node"
echo "$node"
