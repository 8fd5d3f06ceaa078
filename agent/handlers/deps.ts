import type { BackupStore } from "../backups/store";
import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import { type StreamExecutor, streamExecutor } from "../docker/exec-stream";
import { RuncContainers } from "../docker/runc";
import type { DeployLogMessage } from "../git/log";
import type { Ingress } from "../ingress/nginx";
import type { Logger } from "../logger";
import type { BlobStore } from "../transfer/blobs";
import type { RelayClient } from "../transfer/relay";
import type { KeyedLock } from "./keyed-lock";

/** The SSH gateway as the handlers see it: one listener per pod, on the pod's own port. */
export interface PodSshListeners {
  /** listen for the pod (idempotent; a port that cannot be bound is logged, not thrown) */
  open(pod: string, port: number): Promise<void>;
  /** stop listening and end the pod's connections */
  close(pod: string): Promise<void>;
  /** the pod's container started or stopped (the events watcher's view): logins to a stopped pod are refused at once */
  podState?(pod: string, running: boolean): void;
  /** the agent changed the pod's authorized_keys: the gateway reads it again at the next login */
  keysChanged?(pod: string): void;
}

/** What the pod handlers and the events watcher work with; main.ts builds one and shares it. */
export interface HandlerDeps {
  config: AgentConfig;
  docker: DockerClient;
  ingress: Ingress;
  log: Logger;
  /** per-pod serialisation, shared by the handlers and the events watcher (one is made if absent) */
  locks?: KeyedLock;
  /** absent where no gateway runs (most handler tests) */
  ssh?: PodSshListeners;
  /** the control plane's staged blobs (ZIP archives); absent without a connection */
  blobs?: BlobStore;
  /** the control plane's backup archives (`/agent/backups/`); absent without a connection */
  backups?: BackupStore;
  /** the control plane's streamed transfers (file bytes); absent without a connection */
  relay?: RelayClient;
  /** sends a deploy's build output to the control plane (`agent:deploy-log`); absent: not sent */
  deployLog?: (message: DeployLogMessage) => boolean;
  /** the periodic health watch (agent/health/monitor.ts); absent where none runs */
  health?: { forget(pod: string): void };
}

/**
 * How a handler group starts bulk-byte processes in pods: `runc exec` where the engine's runc state
 * is on this host (config.runcRoot), else the engine's exec (../docker/exec-stream.ts).
 */
export function podStreams(deps: Pick<HandlerDeps, "docker" | "config">): StreamExecutor {
  const { docker } = deps;
  const root = deps.config.runcRoot;
  return streamExecutor(docker, root ? new RuncContainers(docker, root) : null);
}
