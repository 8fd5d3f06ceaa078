import type { DockerClient } from "../docker/client";
import { dockerStatus } from "../docker/client";
import { type ExecResult, execInContainer } from "../docker/exec";
import { HOME, podNames } from "../docker/naming";
import { BASH, TIMEOUT } from "../docker/pod-bin";
import { inspectContainer } from "../docker/resources";
import { AgentError } from "../errors";

/**
 * One of the backups' fixed scripts run as pod_user in a container (the pod's, a sidecar's, the
 * test-restore box), under coreutils `timeout` and the agent's PATH; every argument a positional
 * parameter, never part of the script's text. Output capped (64 KiB unless told).
 */
export async function runScript(
  docker: DockerClient,
  container: string,
  script: string,
  args: string[],
  opts: { timeoutS: number; stdin?: string | Buffer; maxOutputBytes?: number; signal?: AbortSignal },
): Promise<ExecResult> {
  const signal = AbortSignal.any([
    ...(opts.signal ? [opts.signal] : []),
    AbortSignal.timeout((opts.timeoutS + 30) * 1000),
  ]);
  return execInContainer(
    docker,
    container,
    [TIMEOUT, "-k", "5", String(opts.timeoutS), BASH, "-c", script, "bash", ...args],
    {
      workingDir: HOME,
      stdin: opts.stdin,
      maxOutputBytes: opts.maxOutputBytes ?? 64 * 1024,
      signal,
    },
  ).catch((err: unknown) => {
    if (dockerStatus(err) === 409) throw new AgentError("bad_request", "pod is not running; start it first");
    throw err;
  });
}

/** the last lines of a script's stderr, for a failure's one line */
export const tail = (text: string, max = 300) => {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
};

/**
 * A failed script's words for its reason, never empty: its stderr's tail, else how it ended (a
 * process killed by a signal prints nothing).
 */
export const whyItFailed = (run: { exitCode: number; stderr: string }) =>
  tail(run.stderr) || (run.exitCode > 128 ? `killed by signal ${run.exitCode - 128}` : "it printed nothing");

/** The pod's container name when it runs; null when it is stopped; not_found when it has none here. */
export async function runningContainer(
  docker: DockerClient,
  prefix: string,
  pod: string,
): Promise<string | null> {
  const container = podNames(prefix, pod).container;
  const info = await inspectContainer(docker, container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  return info.State.Running ? container : null;
}
