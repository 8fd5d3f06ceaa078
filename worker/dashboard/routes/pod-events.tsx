import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { listAlertEvents } from "../../services/alerts/rules";
import { listPodEvents } from "../../services/pods/events";
import { ErrorPage } from "../components/error-page";
import { offsetParam, podTab } from "../components/pod-tab";
import { EVENTS_PAGE_SIZE, EventsTab } from "../pages/pod-events";
import { requireSignedIn } from "../session";

/** A pod's Events tab (docs/dashboard.md), read as `GET /api/pods/{name}/events?type=…` does. */
export const podEventsArea = new Hono<AppEnv>();

podEventsArea.get("/pods/:name/events", requireSignedIn, async (c) => {
  const type = c.req.query("type") || undefined;
  // the API's own bound on `type` (worker/routes/pods/events.ts)
  if (type && type.length > 40) {
    return c.html(<ErrorPage status={400} message="type: must be at most 40 characters" />, 400);
  }
  const tab = await podTab(c);
  if ("notFound" in tab) return tab.notFound;
  const { page, pod } = tab;
  const input = { name: pod.name, type, limit: EVENTS_PAGE_SIZE, offset: offsetParam(c.req.query("offset")) };
  const [list, alerts] = await Promise.all([
    listPodEvents({ ctx: page.ctx, teamId: page.caller.teamId, input }),
    // the pod's alert switches are the owner's (the verb's 403 for a member: the tab says so)
    listAlertEvents(page.ctx, page.caller.user.id, page.caller.teamId),
  ]);
  return c.html(
    <EventsTab
      page={page}
      pod={pod}
      list={unwrap(list)}
      type={type}
      alerts={alerts.ok ? alerts.value : null}
    />,
  );
});
