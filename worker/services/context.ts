import type { Db } from "../db/client";
import type { Bindings } from "../env";
import type { Mailer } from "./mail/mailer";

/** What every service verb receives: storage and configuration, never the HTTP request. */
export interface ServiceContext {
  db: Db;
  env: Bindings;
  mailer: Mailer;
}
