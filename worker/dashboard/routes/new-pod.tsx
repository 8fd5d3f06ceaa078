import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { serviceContext } from "../../http/router";
import { listPlans, listPresets, listRegions } from "../../services/catalog/catalog";
import { listPodEvents } from "../../services/pods/events";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { NewPodPage, NewPodProgress, SOURCES, type Source } from "../pages/new-pod";
import { requireSignedIn } from "../session";

/** The new pod page (`/app/new`) and the fragment that follows a new pod's progress. */
export const newPodArea = new Hono<AppEnv>();

const isSource = (s: string | undefined): s is Source => SOURCES.some(([key]) => key === s);

newPodArea.get("/new", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const source = c.req.query("source");
  const catalog = {
    plans: listPlans(),
    presets: listPresets(),
    regions: await listRegions({ ctx: page.ctx }),
  };
  return c.html(<NewPodPage page={page} catalog={catalog} source={isSource(source) ? source : "empty"} />);
});

/**
 * The new pod's status and its first events (`GET /api/pods/{name}` and `.../events` in one
 * fragment), polled every second by the page until the pod runs or fails. Another team's pod is
 * the same 404 as a missing one.
 */
newPodArea.get("/new/progress/:name", requireSignedIn, async (c) => {
  // no header on a fragment: the page it goes into has it (and its team list)
  const page = { ctx: serviceContext(c), caller: c.get("caller"), base: c.env.PUBLIC_URL, teams: [] };
  const name = c.req.param("name");
  const pod = await podForPage(page, name);
  if (!pod) return c.html(<p class="form-error">pod {name} not found</p>, 404);
  const { events } = unwrap(
    await listPodEvents({
      ctx: page.ctx,
      teamId: page.caller.teamId,
      input: { name, limit: 50, offset: 0 },
    }),
  );
  return c.html(<NewPodProgress page={page} pod={pod} events={events.toReversed()} />);
});
