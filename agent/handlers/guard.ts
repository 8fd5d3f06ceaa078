import type { Op } from "../../shared/protocol";
import { dockerMessage, dockerStatus, toAgentError } from "../docker/client";
import { AgentError } from "../errors";
import type { Handler } from "./types";

/**
 * Errors leave a handler as AgentError: engine down → unavailable, engine 404 → not_found, the
 * engine's other failures in words of our own (../docker/engine-errors.ts). What the engine or Node
 * said itself (host paths, ids) goes only into this log line, for the operator.
 */
export const guard =
  <O extends Op>(op: O, fn: Handler<O>): Handler<O> =>
  async (params, ctx) => {
    try {
      return await fn(params, ctx);
    } catch (err) {
      const e = toAgentError(err, op);
      if (!(err instanceof AgentError)) {
        const fields = { op, error: e.message, raw: dockerMessage(err), status: dockerStatus(err) };
        if (e.code === "internal") ctx.log.error("op failed", fields);
        else ctx.log.warn("op failed", fields);
      } else if (e.code === "internal") ctx.log.error("op failed", { op, error: e.message });
      throw e;
    }
  };
