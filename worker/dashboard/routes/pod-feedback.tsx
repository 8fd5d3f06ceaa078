import { Hono } from "hono";
import { FEEDBACK_STATUSES, type FeedbackStatus } from "../../db/schema";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { listFeedback } from "../../services/feedback/list";
import { ErrorPage } from "../components/error-page";
import { offsetParam, podTab } from "../components/pod-tab";
import { FEEDBACK_PAGE_SIZE, FeedbackTab } from "../pages/pod-feedback";
import { requireSignedIn } from "../session";

/**
 * A pod's Feedback tab (docs/dashboard.md): the widget's settings and the inbox, read as
 * `GET /api/pods/{name}/feedback?status=…` does.
 */
export const podFeedbackArea = new Hono<AppEnv>();

const isStatus = (s: string): s is FeedbackStatus => (FEEDBACK_STATUSES as readonly string[]).includes(s);

podFeedbackArea.get("/pods/:name/feedback", requireSignedIn, async (c) => {
  const asked = c.req.query("status") || undefined;
  if (asked !== undefined && !isStatus(asked)) {
    return c.html(<ErrorPage status={400} message="status: must be new, read or resolved" />, 400);
  }
  const tab = await podTab(c);
  if ("notFound" in tab) return tab.notFound;
  const { page, pod } = tab;
  const input = {
    name: pod.name,
    status: asked,
    limit: FEEDBACK_PAGE_SIZE,
    offset: offsetParam(c.req.query("offset")),
  };
  const list = unwrap(await listFeedback({ ctx: page.ctx, teamId: page.caller.teamId, input }));
  return c.html(<FeedbackTab page={page} pod={pod} list={list} status={asked} />);
});
