import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import type { Ingress } from "../ingress/nginx";
import type { Logger } from "../logger";
import type { KeyedLock } from "./keyed-lock";

/** What the pod handlers and the events watcher work with; main.ts builds one and shares it. */
export interface HandlerDeps {
  config: AgentConfig;
  docker: DockerClient;
  ingress: Ingress;
  log: Logger;
  /** per-pod serialisation, shared by the handlers and the events watcher (one is made if absent) */
  locks?: KeyedLock;
}
