import type { DockerClient } from "./client";
import { execInContainer } from "./exec";
import { SH } from "./pod-bin";

/**
 * Stopping, starting and restarting a pod's runit services, and knowing when it happened.
 *
 * runit's `sv` is only used to send: its own waits cost. `sv restart` decides that a restart took
 * effect by comparing whole seconds (the service's last change against its own start), so a
 * service that started in the same second as the command counts as restarted at once, while the
 * old process still serves. The agent then saw the old server answer, called the pod running, and
 * visitors met a 502 when it went away (a from-zip pod is reloaded within a second of its boot).
 * Otherwise it waits for the next whole second. `sv stop` and `sv start` look every 420 ms: a
 * restore, which stops the app and starts it again, waited ~0.85 s on them.
 *
 * Here each waits by reading the service's `supervise/stat` and `supervise/pid` every 10 ms:
 * - `sv_restart`: `web` (the pod's nginx) is reloaded in place: `sv hup`, nginx's graceful reload
 *   (new config, new workers, requests in flight finish; a broken config leaves the old one
 *   serving). Never sent before nginx has written its pid file, which it does after its signal
 *   handlers are in place: a HUP earlier would end it (it is booting then, and reads the current
 *   config anyway). Every other service: `term`, `cont`, `up` (what `sv restart` sends, none of
 *   which waits), then until a new pid is in the `run` state. runsv starts it only after the old
 *   one and its finish script exited, so the old server is gone; whether the new one listens is
 *   the caller's wait on the port.
 * - `sv_stop`: `down`, then until the state is `down` (the process and its finish script exited).
 * - `sv_start`: `up`, then until the state is `run`.
 *
 * Shell functions, so scripts that do more around them (reload, restore) can call them; each
 * prints `<verb> <service> <status>` per service, status 0 when it took effect within 7 s (sv's
 * own limit; runsv waits a second before restarting a service that ran for less than one).
 */
export const RUNIT_FNS = `sv_wait() {
  i=0
  until "$@"; do i=$((i + 1)); [ "$i" -lt 700 ] || return 1; /bin/sleep 0.01; done
}
sv_state() {
  p=$(/bin/cat "$d/pid" 2>/dev/null); st=$(/bin/cat "$d/stat" 2>/dev/null); st=\${st%%,*}
}
sv_nginx_ready() {
  sv_state; [ -n "$p" ] && [ "$p" = "$(/bin/cat /run/pod/nginx.pid 2>/dev/null)" ]
}
sv_new_process() { sv_state; [ -n "$p" ] && [ "$p" != "$o" ] && [ "$st" = run ]; }
sv_is_down() { sv_state; [ "$st" = down ]; }
sv_is_up() { sv_state; [ -n "$p" ] && [ "$st" = run ]; }
sv_dir() { d="\${SVDIR:-/run/pod/service}/$1/supervise"; }
sv_restart() {
  for s in "$@"; do
    sv_dir "$s"
    if [ "$s" = web ] && [ -e /opt/podhost/bin/pod-runtime-template ]; then
      /usr/bin/sv up "$s" >/dev/null 2>&1 && sv_wait sv_nginx_ready && /usr/bin/sv hup "$s" >/dev/null 2>&1
    else
      sv_state; o=$p
      /usr/bin/sv term "$s" >/dev/null 2>&1 && /usr/bin/sv cont "$s" >/dev/null 2>&1 &&
        /usr/bin/sv up "$s" >/dev/null 2>&1 && sv_wait sv_new_process
    fi
    echo "restarted $s $?"
  done
}
sv_stop() {
  for s in "$@"; do
    sv_dir "$s"; /usr/bin/sv down "$s" >/dev/null 2>&1 && sv_wait sv_is_down
    echo "stopped $s $?"
  done
}
sv_start() {
  for s in "$@"; do
    sv_dir "$s"; /usr/bin/sv up "$s" >/dev/null 2>&1 && sv_wait sv_is_up
    echo "started $s $?"
  done
}`;

/**
 * Restart `services` in a running pod container and wait until each runs a new process. Returns
 * the services that did not confirm (a service that fails to come up is the app's problem, told
 * in its log; callers decide whether that fails what they were doing).
 */
export async function restartServices(
  docker: DockerClient,
  container: string,
  services: string[],
  timeoutMs = 30_000,
): Promise<string[]> {
  const r = await execInContainer(
    docker,
    container,
    [SH, "-c", `${RUNIT_FNS}\nsv_restart "$@"`, "sh", ...services],
    {
      signal: AbortSignal.timeout(timeoutMs),
    },
  );
  const confirmed = new Set(
    r.stdout
      .split("\n")
      .map((line) => line.trim().split(" "))
      .filter(([word, , status]) => word === "restarted" && status === "0")
      .map(([, service]) => service),
  );
  return services.filter((s) => !confirmed.has(s));
}
