import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { metricsHistory } from "../../services/metrics/history";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { METRICS_RANGES, MetricsPage } from "../pages/pod/metrics";
import { requireSignedIn } from "../session";

/** A pod's Metrics tab (docs/dashboard.md "Metrics"): the history read from D1 with the page, no host asked. */
export const podMetricsRouter = new Hono<AppEnv>();

podMetricsRouter.get("/pods/:name/metrics", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  const [range, , hours] = METRICS_RANGES.find(([key]) => key === c.req.query("range")) ?? METRICS_RANGES[0];
  const history = await metricsHistory(page.ctx.db, page.caller.teamId, pod.name, hours);
  if (!history.ok)
    return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  return c.html(<MetricsPage page={page} data={{ pod, range, hours, history: history.value }} />);
});
