import { HOME } from "../docker/naming";
import { RELEASES } from "./release";
import { CANDIDATE_PID_FILE } from "./standby";

/**
 * The candidate's app: the images' `run-app` rules (images/README.md: `~/.pod/start`, a Procfile's
 * web: line, then the preset's defaults, `.env` loaded by pod-env-exec) applied to the release's
 * directory instead of ~/app. Kept here rather than in the images so a deploy does not depend on
 * an image rebuild; the switch then checks that the pod's own app answers too, and goes back to
 * the previous release when it does not. $1 preset, $2 the release's directory, $3 the port; with
 * $4 = "npm", $5-$8 are package.json's start script, name, version and hooks as the agent read them
 * from the commit (lib/npm-start.sh `npm_start_from`: no node start to read them again).
 */
export const CANDIDATE_RUN = `set -euo pipefail
H=${HOME}; P=$1; APP=$2; pkg=("\${4-}" "\${5-}" "\${6-}" "\${7-}" "\${8-}")
exec >>"$H/logs/app.log" 2>&1
# each exec is a session leader: its pid names the process group a stop ends (./standby.ts)
{ echo $$ >${CANDIDATE_PID_FILE}; } 2>/dev/null || true
cd "$APP"
export PORT=$3
if [ "$P" = nodejs ]; then
  . /opt/podhost/lib/node-major.sh; node_major; export PATH="/opt/node/$NODE_MAJOR/bin:$PATH"
elif [ -x "$APP/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$APP/.venv" PATH="$APP/.venv/bin:$PATH"
fi
set --
if [ -s "$H/.pod/start" ]; then
  set -- bash -c "$(cat "$H/.pod/start")"
elif [ -f Procfile ] && web=$(sed -n 's/^web:[[:space:]]*//p' Procfile | head -n 1) && [ -n "$web" ]; then
  set -- bash -c "$web"
elif [ "$P" = nodejs ]; then
  if [ -f package.json ] && [ -f /opt/podhost/lib/npm-start.sh ]; then
    . /opt/podhost/lib/npm-start.sh
    if [ "\${pkg[0]}" = npm ]; then npm_start_from "\${pkg[@]:1}"; else npm_start; fi
    set -- "\${NPM_START[@]}"
  elif [ -f package.json ] && node -e 'process.exit(require("./package.json").scripts?.start ? 0 : 1)' 2>/dev/null; then
    set -- npm start # an image from before lib/npm-start.sh
  fi
  if [ $# -eq 0 ]; then
    for f in server.js index.js app.js main.js; do [ -f "$f" ] && { set -- node "$f"; break; }; done
  fi
else
  for f in app.py main.py server.py; do [ -f "$f" ] && { set -- python "$f"; break; }; done
fi
printf -v now '%(%Y-%m-%dT%H:%M:%SZ)T' -1
[ $# -gt 0 ] || { echo "[podhost] $now candidate: no start command found in $APP"; exit 1; }
echo "[podhost] $now starting the new release (candidate): $*"
exec /opt/podhost/bin/pod-env-exec "$APP/.env" "$@"`;

/** package.json's start script and what npm gives it (lib/npm-start.sh `npm_start_from`) */
export interface NpmStart {
  script: string;
  name: string;
  version: string;
  /** a prestart or poststart script: then `npm start` runs it all */
  hooks: boolean;
}

/** CANDIDATE_RUN's arguments after the script itself: preset, directory, port, the npm fields */
export const candidateArgs = (preset: string, dir: string, port: number, npm: NpmStart | null = null) => [
  preset,
  dir,
  String(port),
  ...(npm ? ["npm", npm.script, npm.name, npm.version, npm.hooks ? "hooks" : ""] : []),
];

/** CANDIDATE_RUN on a release, as a command line */
export const candidateArgv = (release: string, preset: string, port: number) => [
  "/bin/bash",
  "-c",
  CANDIDATE_RUN,
  "run-app",
  ...candidateArgs(preset, `${RELEASES}/${release}`, port),
];
