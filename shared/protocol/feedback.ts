import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Visitor feedback (docs/feedback.md). The Worker owns the settings and the comments; a host only
 * learns how the pod's vhost injects the widget: `enabled`, `visibility` and the `token`, and where
 * the widget script is served (`scriptUrl`, from the Worker's PUBLIC_URL). The host keeps them in
 * its state dir, so a restart, stop/start or redeploy of the pod keeps the widget.
 * Spread into `ops` in ./ops.ts like ./domains.ts.
 */

/** A feedback token: what `randomToken` makes (shared/ids.ts), lowercase base32. */
const TOKEN = /^[0-9a-z]{16,64}$/;
export const isFeedbackToken = (token: string): boolean => TOKEN.test(token);

/**
 * Where the widget script is served: http(s), a host name or IPv4 address, an optional port and a
 * plain path. Nothing that could leave a quoted nginx string or an HTML attribute (no quote, `$`,
 * `;`, `\`, space, `<`, `{`, newline): the vhost interpolates it into both.
 */
const SCRIPT_URL = /^https?:\/\/[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?\/[A-Za-z0-9._~/-]{0,200}$/;
export const isWidgetScriptUrl = (url: string): boolean => url.length <= 500 && SCRIPT_URL.test(url);

export const FeedbackVisibility = lazy(() => z.enum(["everyone", "link"]));

export const FeedbackVhost = lazy(() =>
  z.object({
    enabled: z.boolean(),
    visibility: FeedbackVisibility(),
    token: z.string().refine(isFeedbackToken, "not a feedback token"),
    scriptUrl: z.string().max(500).refine(isWidgetScriptUrl, "not a widget script URL"),
  }),
);
export type FeedbackVhost = Built<typeof FeedbackVhost>;

export const feedbackOps = {
  /**
   * the pod's vhost injects the widget as `feedback` says (or not, when disabled): the host
   * remembers it and renders the pod's vhost again. The pod must be running (it has no address
   * to render otherwise): when the vhost cannot be rendered, the host keeps what it had and the
   * call fails. Idempotent.
   */
  "pod.feedback.set": () => ({
    params: z.object({ name: PodName, feedback: FeedbackVhost() }),
    result: z.object({ rendered: z.literal(true) }),
  }),
};
