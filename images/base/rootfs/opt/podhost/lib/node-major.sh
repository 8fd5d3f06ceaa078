# Sourced by bash (pod-node-version, the nodejs app service): node_major sets NODE_MAJOR to the
# Node major selected by ~/.pod/node-version ("22", "v22.1.0", ...); 20 when absent or not
# installed. Builtins only, and no $(...) (a fork): the node/npm/npx shims run it at every call.
node_major() {
  local v=
  { IFS= read -r v || true; } 2>/dev/null </home/pod_user/.pod/node-version
  v=${v//[ v$'\r']/}; v=${v%%.*}
  [[ -n $v && $v != */* && -x /opt/node/$v/bin/node ]] || v=20
  NODE_MAJOR=$v
}
