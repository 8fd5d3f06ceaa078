import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { parseDiagnosis } from "../../services/health/report";
import { latestMetrics } from "../../services/metrics/history";
import { sshAccess } from "../../services/ssh/access";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { OverviewPage } from "../pages/pod/overview";
import { requireSignedIn } from "../session";

/**
 * A pod's Overview tab (docs/dashboard.md "Overview"): read from D1 only (the pod row, its SSH port,
 * the stored diagnosis and the newest metrics sample), so the page never waits on the pod's host.
 */
export const podOverviewRouter = new Hono<AppEnv>();

podOverviewRouter.get("/pods/:name", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  const input = { name: pod.name };
  const [ssh, metrics] = await Promise.all([
    sshAccess({ ctx: page.ctx, teamId: page.caller.teamId, input }),
    latestMetrics(page.ctx.db, page.caller.teamId, pod.name),
  ]);
  const data = {
    pod,
    ssh: ssh.ok ? ssh.value : { error: ssh.message },
    diagnosis: parseDiagnosis(pod.app_health_diagnosis ?? null),
    metrics: metrics.ok ? metrics.value : null,
  };
  return c.html(<OverviewPage page={page} data={data} />);
});
