# npm_start (sourced by run-app and by a git deploy's candidate): sets NPM_START to what `npm start`
# would run for the package in the current directory, without npm in between; empty when
# package.json has no scripts.start (or cannot be read).
#
# npm itself costs ~0.1 s of CPU at every start (~0.2 s under a pod's half CPU) and ~45 MB that
# stays resident beside the app for its whole life. What npm gives a start script is done here:
# `sh -c` in the package's directory, node_modules/.bin first on PATH, and npm's lifecycle and
# package variables (npm_lifecycle_event, npm_lifecycle_script, npm_package_name,
# npm_package_version, npm_package_json, npm_command, INIT_CWD, NODE). A package with prestart
# or poststart scripts is run by `npm start` itself, so the hooks still run.
npm_start() {
  NPM_START=()
  local f=()
  # one node start (~25 ms) reads package.json: the fields come NUL-separated (a script may hold
  # any other character)
  mapfile -d '' -t f < <(node -e '
const p = require(process.cwd() + "/package.json");
const s = (p && p.scripts) || {};
const str = (v) => (typeof v === "string" ? v.replaceAll("\0", "") : "");
const hooks = s.prestart || s.poststart ? "hooks" : "";
process.stdout.write([str(s.start), str(p.name), str(p.version), hooks].join("\0") + "\0");
' 2>/dev/null)
  npm_start_from "${f[0]:-}" "${f[1]:-}" "${f[2]:-}" "${f[3]:-}"
}

# npm_start_from START NAME VERSION HOOKS: the same from fields already read (a git deploy's
# candidate: the agent read package.json from the commit). HOOKS non-empty: prestart/poststart.
npm_start_from() {
  NPM_START=()
  [ -n "$1" ] || return 0
  if [ -n "$4" ]; then
    NPM_START=(npm start)
    return 0
  fi
  export PATH="$PWD/node_modules/.bin:$PATH" npm_lifecycle_event=start npm_command=start \
    npm_lifecycle_script="$1" npm_package_name="$2" npm_package_version="$3" \
    npm_package_json="$PWD/package.json" INIT_CWD="$PWD" NODE="$(type -P node)"
  NPM_START=(/bin/sh -c "$1")
}
