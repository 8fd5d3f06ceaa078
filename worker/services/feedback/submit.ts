import { count, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type FeedbackRow, feedback } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { MAX_POD_FEEDBACK, SUBMITTER_ID } from "./caps";
import { findCollectingPod } from "./lookup";
import { type FeedbackView, toFeedbackView } from "./views";

export interface FeedbackSubmission {
  token: string;
  comment: string;
  name?: string;
  email?: string;
  submitter_id?: string;
  page_path?: string;
  pin_selector?: string;
  pin_x?: number;
  pin_y?: number;
  viewport_w?: number;
  viewport_h?: number;
  element_text?: string;
}

/**
 * An email address as far as a comment needs one: one `@` with something on both sides and a dot
 * in the domain, no spaces or control characters. Checked by walking the string once (no regex
 * over what a stranger sent); the length was capped before.
 */
export function plausibleEmail(email: string): boolean {
  const at = email.indexOf("@");
  if (at <= 0 || at !== email.lastIndexOf("@") || at > 64) return false;
  const domain = email.slice(at + 1);
  const dot = domain.lastIndexOf(".");
  if (dot <= 0 || dot === domain.length - 1) return false;
  for (let i = 0; i < email.length; i++) {
    const c = email.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return false;
  }
  return true;
}

/**
 * `POST /api/feedback/{token}` (public): a visitor's comment on the pod collecting under `token`,
 * `new`, 201 with the stored comment. 404 for an unknown token and a disabled collection alike.
 * `comment` is required, and a `name` or an `email`; every field is capped (caps.ts, the route's
 * schema checks the lengths). Without a `submitter_id` the comment gets a fresh one, which the
 * visitor uses to read their comments back (`/mine`). Rate limited per IP at the route.
 */
export async function submitFeedback({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: FeedbackSubmission;
}): Promise<Result<FeedbackView>> {
  const comment = input.comment.trim();
  const name = (input.name ?? "").trim();
  const email = (input.email ?? "").trim();
  if (comment === "") return fail("bad_request", "comment: must not be empty");
  if (name === "" && email === "") return fail("bad_request", "name or email: give at least one");
  if (email !== "" && !plausibleEmail(email))
    return fail("bad_request", "email: must be an email address (name@example.com)");
  if (input.submitter_id !== undefined && !SUBMITTER_ID.test(input.submitter_id))
    return fail("bad_request", "submitter_id: must be 1-64 letters, digits, '_' or '-'");
  const pagePath = input.page_path ?? "";
  if (pagePath !== "" && !pagePath.startsWith("/"))
    return fail("bad_request", "page_path: must start with '/' (the path of the page on the pod's site)");
  const found = await findCollectingPod(ctx.db, input.token);
  if (!found.ok) return found;
  const { podId, podName } = found.value;
  if ((await storedCount(ctx.db, podId)) >= MAX_POD_FEEDBACK)
    return fail(
      "conflict",
      `this site already holds ${MAX_POD_FEEDBACK} feedback comments, the most kept; its owner must delete some first`,
    );
  const row: FeedbackRow = {
    id: newId("fb"),
    podId,
    submitterId: input.submitter_id ?? `sub_${randomToken(24)}`,
    name,
    email,
    comment,
    pagePath,
    pinSelector: input.pin_selector ?? "",
    pinX: input.pin_x ?? null,
    pinY: input.pin_y ?? null,
    viewportW: input.viewport_w ?? null,
    viewportH: input.viewport_h ?? null,
    elementText: (input.element_text ?? "").trim(),
    status: "new",
    createdAt: nowIso(),
  };
  await ctx.db.insert(feedback).values(row);
  return ok(toFeedbackView(row, podName));
}

const storedCount = async (db: Db, podId: string) =>
  (await db.select({ n: count() }).from(feedback).where(eq(feedback.podId, podId)))[0]?.n ?? 0;
