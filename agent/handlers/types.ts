import type { z } from "zod";
import type { Op, OpResult, ops, PodState } from "../../shared/protocol";
import type { Logger } from "../logger";

export interface HandlerContext {
  /** aborted when the command times out or the agent shuts down */
  signal: AbortSignal;
  log: Logger;
}

export type Handler<O extends Op> = (
  params: z.output<(typeof ops)[O]["params"]>,
  ctx: HandlerContext,
) => Promise<OpResult<O>>;

/** One handler per op of the shared protocol: the compiler rejects a missing or mistyped one. */
export type HandlerTable = { [O in Op]: Handler<O> };

/** What the agent tells the control plane on its own initiative. */
export interface AgentEvents {
  podStatus(pod: PodState, reason?: string): void;
}
