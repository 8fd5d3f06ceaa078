import type { DockerClient } from "../docker/client";
import { podNames } from "../docker/naming";
import { inspectContainer, stopContainer } from "../docker/resources";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import type { ServiceKind, ServiceSidecar } from "./services";
import { type Helper, startPodHelper, startServiceHelper } from "./stopped-pod";

/**
 * Where a backup or a restore of a pod does its work. A running pod: its own container (the job's
 * scripts exec'd there as pod_user) and its running sidecars. A stopped pod: the helpers of
 * ./stopped-pod.ts: one made like the pod on its home volume for the scripts, and for each database
 * a helper on the sidecar's data started for its dump or load only. The pod and its sidecars are
 * never started, so they are left stopped exactly as they were; meanwhile a start of the pod is
 * refused (409) rather than queued behind the job (`hold`, ../handlers/keyed-lock.ts).
 */

/** a sidecar of the pod as the handler lists it (any state) */
export interface InstalledService extends ServiceSidecar {
  running: boolean;
}

export interface WorkspaceDeps {
  docker: DockerClient;
  prefix: string;
  log: Logger;
  /** the pod's managed service sidecars, any state */
  sidecars(pod: string): Promise<InstalledService[]>;
  /** the pod's lock says why a start must not wait for this job, until released */
  hold?(note: string): () => void;
}

export type ServerUse =
  | { ok: true; sidecar: ServiceSidecar; release(): Promise<void> }
  | { ok: false; reason: string };

export interface Workspace {
  /** the container the job's scripts run in: the pod's, or its helper */
  container: string;
  /** the pod is stopped: its app's services are not running and its /tmp does not outlive the job */
  stopped: boolean;
  /** the kinds of managed database this job can dump or load */
  services: ServiceKind[];
  /** the kind's server, up until `release` (a helper for a stopped pod: started, then stopped) */
  serverOf(kind: ServiceKind): Promise<ServerUse>;
  /** the helpers removed, the hold released; never throws */
  close(): Promise<void>;
}

/** What to do with a stopped pod: `refuse` (a scheduled backup skips it), `helper` (see above). */
export type WhenStopped = "refuse" | "helper";

export const NOT_RUNNING = "pod is not running; start it first";

export async function openWorkspace(
  deps: WorkspaceDeps,
  pod: string,
  opts: { whenStopped: WhenStopped; job: "backed up" | "restored"; signal: AbortSignal },
): Promise<{ ok: true; workspace: Workspace } | { ok: false; reason: string }> {
  const { docker, prefix, log } = deps;
  const container = podNames(prefix, pod).container;
  const info = await inspectContainer(docker, container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  if (info.State.Restarting)
    return { ok: false, reason: `pod ${pod} is restarting (its app keeps exiting); try again once it runs` };
  const sidecars = await deps.sidecars(pod);
  if (info.State.Running) {
    const running = new Map(sidecars.filter((s) => s.running).map((s) => [s.kind, s]));
    return {
      ok: true,
      workspace: {
        container,
        stopped: false,
        services: [...running.keys()],
        serverOf: async (kind) => {
          const sidecar = running.get(kind);
          return sidecar
            ? { ok: true, sidecar, release: async () => undefined }
            : { ok: false, reason: `the pod has no running ${kind} service` };
        },
        close: async () => undefined,
      },
    };
  }
  if (opts.whenStopped === "refuse") return { ok: false, reason: NOT_RUNNING };

  const release = deps.hold?.(`pod ${pod} is stopped and being ${opts.job}; start it when that has finished`);
  const done = () => release?.();
  let helper: Helper;
  try {
    // a sidecar left running beside its stopped pod is out of step (syncSidecars stops it): its
    // data must not be served twice
    for (const s of sidecars) if (s.running) await stopContainer(docker, s.container);
    log.info("backup: the pod is stopped, working in a helper container", { pod });
    helper = await startPodHelper(docker, prefix, pod, info, log, opts.signal);
  } catch (err) {
    done();
    throw err;
  }
  const byKind = new Map(sidecars.map((s) => [s.kind, s]));
  return {
    ok: true,
    workspace: {
      container: helper.name,
      stopped: true,
      services: [...byKind.keys()],
      serverOf: async (kind) => {
        const s = byKind.get(kind);
        const sidecar = s ? await inspectContainer(docker, s.container) : null;
        if (!s || !sidecar) return { ok: false, reason: `the pod has no ${kind} service` };
        const up = await startServiceHelper(docker, prefix, pod, kind, sidecar, log, opts.signal);
        if (!up.ok) return up;
        return { ok: true, sidecar: { kind, container: up.helper.name }, release: up.helper.remove };
      },
      close: async () => {
        await helper.remove();
        done();
      },
    },
  };
}
