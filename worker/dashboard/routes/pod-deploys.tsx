import { and, eq, inArray } from "drizzle-orm";
import { Hono } from "hono";
import { deployments } from "../../db/schema";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { serviceContext } from "../../http/router";
import type { ServiceContext } from "../../services/context";
import { configOf, getRepository } from "../../services/git/config";
import { getDeployment, listDeployments } from "../../services/git/deployments";
import { servingDeployment } from "../../services/git/job";
import type { DeploymentView } from "../../services/git/views";
import { findTeamPod } from "../../services/pods/lookup";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { type PageContext, pageContext } from "../layout";
import { DeployRows, DeploysPage } from "../pages/pod-data/deploys";
import { requireSignedIn } from "../session";

/** A pod's Deploys tab (docs/dashboard.md "Deploys"): the repository, deploy now, history, build log. */
export const podDeploysArea = new Hono<AppEnv>();

const HISTORY = 20;

/**
 * Which of the listed deployments a rollback can go to, and which one serves now, so the page offers
 * the button only where the API would accept it (the API decides: rollbackPod in services/git).
 */
async function rollbackFacts(ctx: ServiceContext, teamId: string, name: string, list: DeploymentView[]) {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return { rollbackable: new Set<string>(), serving: null };
  const podId = found.value.pod.id;
  const [serving, config] = await Promise.all([servingDeployment(ctx.db, podId), configOf(ctx, podId)]);
  const kept = new Set(config ? (JSON.parse(config.keptReleases) as string[]) : []);
  const ids = list.filter((d) => d.status === "success" || d.status === "rolled_back").map((d) => d.id);
  const rows = ids.length
    ? await ctx.db
        .select({ id: deployments.id, release: deployments.release })
        .from(deployments)
        .where(and(eq(deployments.podId, podId), inArray(deployments.id, ids)))
    : [];
  const rollbackable = new Set(
    rows.filter((r) => r.release && kept.has(r.release) && r.release !== serving?.release).map((r) => r.id),
  );
  return { rollbackable, serving: serving?.id ?? null };
}

async function history(page: Pick<PageContext, "ctx" | "caller">, name: string) {
  const teamId = page.caller.teamId;
  const list = unwrap(await listDeployments({ ctx: page.ctx, teamId, input: { name, limit: HISTORY } }));
  return {
    deployments: list.deployments,
    ...(await rollbackFacts(page.ctx, teamId, name, list.deployments)),
  };
}

podDeploysArea.get("/pods/:name/deploys", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  const teamId = page.caller.teamId;
  const config = unwrap(await getRepository({ ctx: page.ctx, teamId, input: { name: pod.name } }));
  const rows = await history(page, pod.name);
  const wanted = c.req.query("deployment") ?? rows.deployments[0]?.id;
  let shown = null;
  if (wanted) {
    const one = await getDeployment({ ctx: page.ctx, teamId, input: { name: pod.name, id: wanted } });
    if (!one.ok) return c.html(<ErrorPage status={404} message={one.message} />, 404);
    // a running deployment's log is streamed by the page; an ended one is rendered whole
    shown = one.value.status === "deploying" ? { ...one.value, build_log: undefined } : one.value;
  }
  return c.html(<DeploysPage page={page} pod={pod} data={{ config, ...rows, shown }} />);
});

/** The history's rows alone: the fragment htmx polls while a deployment runs. */
podDeploysArea.get("/pods/:name/deploys/rows", requireSignedIn, async (c) => {
  const page = { ctx: serviceContext(c), caller: c.get("caller") };
  const found = await findTeamPod(page.ctx.db, page.caller.teamId, c.req.param("name"));
  if (!found.ok) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  const pod = { name: found.value.pod.name };
  return c.html(<DeployRows pod={pod} data={await history(page, pod.name)} />);
});
