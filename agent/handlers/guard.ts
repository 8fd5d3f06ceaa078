import type { Op } from "../../shared/protocol";
import { toAgentError } from "../docker/client";
import type { Handler } from "./types";

/** Errors leave a handler as AgentError: engine down → unavailable, engine 404 → not_found. */
export const guard =
  <O extends Op>(op: O, fn: Handler<O>): Handler<O> =>
  async (params, ctx) => {
    try {
      return await fn(params, ctx);
    } catch (err) {
      const e = toAgentError(err, op);
      if (e.code === "internal") ctx.log.error("op failed", { op, error: e.message });
      throw e;
    }
  };
