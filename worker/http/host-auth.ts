import type { MiddlewareHandler } from "hono";
import { AGENT_TOKEN_PREFIX } from "../../shared/protocol";
import type { HostRow } from "../db/schema";
import { createIsolateCache } from "../lib/isolate-cache";
import { findHostByAgentToken } from "../services/hosts/hosts";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/** Host rows by agent token (see isolate-cache: a rotated token may work for 5 s more elsewhere). */
const hosts = createIsolateCache<HostRow>();

export type HostEnv = AppEnv & { Variables: AppEnv["Variables"] & { host: HostRow } };

/** A host's own agent token (`hat_…`, printed by `npm run host:add`) as a Bearer credential. */
export const requireHostToken: MiddlewareHandler<HostEnv> = async (c, next) => {
  const token = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token?.startsWith(AGENT_TOKEN_PREFIX)) throw new ApiError("unauthorized", "agent token required");
  const host = hosts.get(token) ?? (await findHostByAgentToken(c.get("db"), token));
  if (host) hosts.set(token, host);
  if (!host) throw new ApiError("unauthorized", "unknown agent token");
  c.set("host", host);
  await next();
};
