import type { MiddlewareHandler } from "hono";
import { AGENT_TOKEN_PREFIX } from "../../shared/protocol";
import type { HostRow } from "../db/schema";
import { findHostByAgentToken } from "../services/hosts/hosts";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

export type HostEnv = AppEnv & { Variables: AppEnv["Variables"] & { host: HostRow } };

/** A host's own agent token (`hat_…`, printed by `npm run host:add`) as a Bearer credential. */
export const requireHostToken: MiddlewareHandler<HostEnv> = async (c, next) => {
  const token = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token?.startsWith(AGENT_TOKEN_PREFIX)) throw new ApiError("unauthorized", "agent token required");
  const host = await findHostByAgentToken(c.get("db"), token);
  if (!host) throw new ApiError("unauthorized", "unknown agent token");
  c.set("host", host);
  await next();
};
