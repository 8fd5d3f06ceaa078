import type { Router } from "../../http/router";
import { WIDGET_SCRIPT } from "./widget-script";

/** an hour in browsers and caches, a day stale while revalidating: a change reaches pages within the hour */
const CACHE_CONTROL = "public, max-age=3600, stale-while-revalidate=86400";

/**
 * `GET /feedback/widget.js`: public and cacheable, the script a pod's vhost injects before
 * `</body>` (contract). Not an API operation, so not in /openapi.json (like /openapi.json and
 * /docs themselves); docs/feedback.md describes it.
 */
export function registerGetFeedbackWidget(app: Router) {
  app.get("/feedback/widget.js", (c) =>
    c.body(WIDGET_SCRIPT, 200, {
      "Content-Type": "application/javascript; charset=utf-8",
      "Cache-Control": CACHE_CONTROL,
      "X-Content-Type-Options": "nosniff",
      "Access-Control-Allow-Origin": "*",
    }),
  );
}
