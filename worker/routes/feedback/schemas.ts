import { z } from "@hono/zod-openapi";
import { FEEDBACK_STATUSES, FEEDBACK_VISIBILITIES } from "../../db/schema";
import { FEEDBACK_CAPS } from "../../services/feedback/caps";

/** Schemas the feedback routes share (docs/feedback.md). */

export const tags = ["Feedback"];

export const FeedbackParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "fb_4k2m9x0q7w3e5r8t1y6u" }),
});

export const TokenParams = z.object({
  token: z
    .string()
    .max(64)
    .openapi({ param: { name: "token", in: "path" }, example: "0123456789abcdefghjkmnpqrstvwxyz" }),
});

export const FeedbackComment = z
  .object({
    id: z.string(),
    pod_name: z.string(),
    submitter_id: z.string(),
    name: z.string(),
    email: z.string(),
    comment: z.string(),
    page_path: z.string(),
    pin_selector: z.string(),
    pin_x: z.number().nullable(),
    pin_y: z.number().nullable(),
    viewport_w: z.number().int().nullable(),
    viewport_h: z.number().int().nullable(),
    element_text: z.string(),
    status: z.enum(FEEDBACK_STATUSES),
    created_at: z.string(),
  })
  .openapi("FeedbackComment");

export const FeedbackSettings = z
  .object({
    enabled: z.boolean(),
    token: z.string().openapi({ description: "the secret of the public endpoints and of share_url" }),
    visibility: z.enum(FEEDBACK_VISIBILITIES),
    share_url: z.string().openapi({ example: "https://my-site.pods.example.net/?pod_feedback=0123…" }),
  })
  .openapi("FeedbackSettings");

const coordinate = z.number().min(-FEEDBACK_CAPS.coordinate).max(FEEDBACK_CAPS.coordinate);
const viewport = z.number().int().min(0).max(FEEDBACK_CAPS.viewport);

export const FeedbackSubmission = z
  .object({
    comment: z.string().max(FEEDBACK_CAPS.comment).openapi({ example: "The button does nothing" }),
    name: z.string().max(FEEDBACK_CAPS.name).optional().openapi({ example: "Grace" }),
    email: z.string().max(FEEDBACK_CAPS.email).optional().openapi({ example: "grace@example.com" }),
    submitter_id: z.string().max(64).optional().openapi({
      description:
        "the visitor's own id (1-64 of [A-Za-z0-9_-]; a short one is guessable, and whoever guesses it reads its comments through /mine); one is made when absent",
      example: "sub_0123456789abcdefghjk",
    }),
    page_path: z.string().max(FEEDBACK_CAPS.pagePath).optional().openapi({ example: "/pricing" }),
    pin_selector: z.string().max(FEEDBACK_CAPS.pinSelector).optional().openapi({ example: "main > button" }),
    pin_x: coordinate.optional(),
    pin_y: coordinate.optional(),
    viewport_w: viewport.optional(),
    viewport_h: viewport.optional(),
    element_text: z.string().max(FEEDBACK_CAPS.elementText).optional(),
  })
  .openapi("FeedbackSubmission");
