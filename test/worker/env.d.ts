import type { D1Migration } from "cloudflare:test";
import type { Bindings } from "../../worker/env";

declare global {
  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
      /** the import double (test/support/import-site.ts) */
      IMPORT_SITE_URL: string;
      /** the alert webhooks' receiver (test/support/webhook-receiver.ts) */
      WEBHOOK_RECEIVER_URL: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../../worker");
    }
  }
}
