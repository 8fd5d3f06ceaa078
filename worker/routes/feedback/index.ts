import { cors } from "hono/cors";
import { createRouter } from "../../http/router";
import { registerListPodFeedback } from "./list";
import { registerListMyFeedback } from "./mine";
import { registerDeletePodFeedback } from "./remove";
import { registerUpdatePodFeedbackSettings } from "./settings";
import { registerSubmitFeedback } from "./submit";
import { registerUpdatePodFeedback } from "./update";
import { registerGetFeedbackWidget } from "./widget";

/**
 * Visitor feedback (docs/feedback.md), mounted at the root: the owner's routes under
 * /api/pods/{name}/feedback, the widget's public ones under /api/feedback/{token}, and the widget
 * itself at /feedback/widget.js. Order below is the OpenAPI document's.
 */
export const feedbackRouter = createRouter();

/**
 * The widget runs on the pod's pages, another origin than the API's: its two public endpoints
 * answer any origin, without credentials (no cookie is ever read there, and none is allowed to be
 * sent), and the preflight of its JSON POST is answered here. No other route has CORS.
 */
feedbackRouter.use(
  "/api/feedback/*",
  cors({ origin: "*", allowMethods: ["GET", "POST"], allowHeaders: ["Content-Type"], maxAge: 600 }),
);

registerListPodFeedback(feedbackRouter);
registerUpdatePodFeedbackSettings(feedbackRouter);
registerUpdatePodFeedback(feedbackRouter);
registerDeletePodFeedback(feedbackRouter);
registerSubmitFeedback(feedbackRouter);
registerListMyFeedback(feedbackRouter);
registerGetFeedbackWidget(feedbackRouter);
