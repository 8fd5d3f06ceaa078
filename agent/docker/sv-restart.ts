import type { DockerClient } from "./client";
import { execInContainer } from "./exec";
import { SH } from "./pod-bin";

/**
 * Restarting a pod's runit services, and knowing when it happened.
 *
 * `sv restart` is not used: it decides that a restart took effect by comparing whole seconds (the
 * service's last change against its own start), so a service that started in the same second as
 * the command counts as restarted at once, while the old process still serves. The agent then saw
 * the old server answer, called the pod running, and visitors met a 502 when it went away (a
 * from-zip pod is reloaded within a second of its boot). Otherwise it waits for the next whole
 * second, polling every 250 ms: about a second added to each reload and deploy.
 *
 * - `web` (the pod's nginx) is reloaded in place: `sv hup`, nginx's graceful reload (new config,
 *   new workers, requests in flight finish; a broken config leaves the old one serving). Never
 *   sent before nginx has written its pid file, which it does after its signal handlers are in
 *   place: a HUP earlier would end it (it is booting then, and reads the current config anyway).
 * - Every other service is restarted: `term`, `cont`, `up` (what `sv restart` sends, none of which
 *   waits), then its `supervise/pid` is watched until it names a new process in the `run` state.
 *   runsv starts it only after the old one and its finish script exited, so the old server is
 *   gone; whether the new one listens is the caller's wait on the port.
 *
 * A shell function, so scripts that do more around the restart (reload) can call it; it prints
 * `restarted <service> <status>` per service, status 0 when it took effect within 7 s (sv's own
 * limit; runsv waits a second before restarting a service that ran for less than one).
 */
export const SV_RESTART_FN = `sv_wait() {
  i=0
  until "$@"; do i=$((i + 1)); [ "$i" -lt 700 ] || return 1; /bin/sleep 0.01; done
}
sv_nginx_ready() {
  p=$(/bin/cat "$d/pid" 2>/dev/null)
  [ -n "$p" ] && [ "$p" = "$(/bin/cat /run/pod/nginx.pid 2>/dev/null)" ]
}
sv_new_process() {
  p=$(/bin/cat "$d/pid" 2>/dev/null); st=$(/bin/cat "$d/stat" 2>/dev/null)
  [ -n "$p" ] && [ "$p" != "$o" ] && [ "\${st%%,*}" = run ]
}
sv_restart() {
  for s in "$@"; do
    d="\${SVDIR:-/run/pod/service}/$s/supervise"
    if [ "$s" = web ] && [ -e /opt/podhost/bin/pod-runtime-template ]; then
      /usr/bin/sv up "$s" >/dev/null 2>&1 && sv_wait sv_nginx_ready && /usr/bin/sv hup "$s" >/dev/null 2>&1
    else
      o=$(/bin/cat "$d/pid" 2>/dev/null)
      /usr/bin/sv term "$s" >/dev/null 2>&1 && /usr/bin/sv cont "$s" >/dev/null 2>&1 &&
        /usr/bin/sv up "$s" >/dev/null 2>&1 && sv_wait sv_new_process
    fi
    echo "restarted $s $?"
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
    [SH, "-c", `${SV_RESTART_FN}\nsv_restart "$@"`, "sh", ...services],
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
