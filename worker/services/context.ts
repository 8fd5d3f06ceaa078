import type { Db } from "../db/client";
import type { Bindings } from "../env";
import type { Mailer } from "./mail/mailer";

/** What every service verb receives: storage and configuration, never the HTTP request. */
export interface ServiceContext {
  db: Db;
  env: Bindings;
  mailer: Mailer;
}

/**
 * What a verb on one team's resource receives: `verb({ ctx, teamId, input })`. `input` is what the
 * caller asked for (a pod's name and the request's fields); `teamId` is whose resources it may touch.
 */
export interface TeamCall<I> {
  ctx: ServiceContext;
  teamId: string;
  input: I;
}
