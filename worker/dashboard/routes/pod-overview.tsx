import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/router";
import { parseDiagnosis } from "../../services/health/report";
import { latestMetrics } from "../../services/metrics/history";
import type { PodView } from "../../services/pods/view";
import { sshAccess } from "../../services/ssh/access";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { type PageContext, pageContext } from "../layout";
import { type OverviewData, OverviewFacts, OverviewPage } from "../pages/pod/overview";
import { requireSignedIn } from "../session";

/**
 * A pod's Overview tab (docs/dashboard.md "Overview"): read from D1 only (the pod row, its SSH port,
 * the stored diagnosis and the newest metrics sample), so the page never waits on the pod's host.
 */
export const podOverviewRouter = new Hono<AppEnv>();

/** What the Overview shows of the pod, read from D1 only. */
async function overviewData(page: PageContext, pod: PodView): Promise<OverviewData> {
  const input = { name: pod.name };
  const [ssh, metrics] = await Promise.all([
    sshAccess({ ctx: page.ctx, teamId: page.caller.teamId, input }),
    latestMetrics(page.ctx.db, page.caller.teamId, pod.name),
  ]);
  return {
    pod,
    ssh: ssh.ok ? ssh.value : { error: ssh.message },
    diagnosis: parseDiagnosis(pod.app_health_diagnosis ?? null),
    metrics: metrics.ok ? metrics.value : null,
  };
}

podOverviewRouter.get("/pods/:name", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  return c.html(<OverviewPage page={page} data={await overviewData(page, pod)} />);
});

/** The Overview's live facts (its 2 s poll): the same cards, as a fragment. */
podOverviewRouter.get("/pods/:name/facts", requireSignedIn, async (c) => {
  const page: PageContext = {
    ctx: serviceContext(c),
    caller: c.get("caller"),
    base: c.env.PUBLIC_URL,
    teams: [],
  };
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  return c.html(<OverviewFacts page={page} data={await overviewData(page, pod)} />);
});
