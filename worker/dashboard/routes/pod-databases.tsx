import { Hono } from "hono";
import { findPlan } from "../../../shared/catalog";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { serviceContext } from "../../http/router";
import { listServices } from "../../services/services/list";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { DatabasesPage, ServiceRows } from "../pages/pod-data/databases";
import { requireSignedIn } from "../session";

/** A pod's Databases tab (docs/dashboard.md "Databases"): install, live status, credentials, remove. */
export const podDatabasesArea = new Hono<AppEnv>();

podDatabasesArea.get("/pods/:name/databases", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  const services = unwrap(
    await listServices({ ctx: page.ctx, teamId: page.caller.teamId, input: { name: pod.name } }),
  );
  return c.html(<DatabasesPage page={page} pod={pod} plan={findPlan(pod.plan_slug)} services={services} />);
});

/** The services' rows alone: the fragment htmx polls every 2 s. */
podDatabasesArea.get("/pods/:name/databases/rows", requireSignedIn, async (c) => {
  const name = c.req.param("name");
  const listed = await listServices({
    ctx: serviceContext(c),
    teamId: c.get("caller").teamId,
    input: { name },
  });
  if (!listed.ok) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  return c.html(<ServiceRows pod={{ name }} services={listed.value} />);
});
