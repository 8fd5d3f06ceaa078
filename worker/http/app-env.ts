import type { Db } from "../db/client";
import type { Bindings } from "../env";
import type { Caller } from "../services/auth/caller";

/** Hono's environment for every router: bindings plus what middleware puts on the context. */
export interface AppEnv {
  Bindings: Bindings;
  Variables: {
    requestId: string;
    db: Db;
    /** set by `requireAuth` (and by `optionalAuth` when credentials are present) */
    caller: Caller;
    /** set by `keepsCachedReads`: this route's success changes nothing the isolate caches */
    keepsCachedReads?: true;
  };
}
