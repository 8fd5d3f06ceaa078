import { type Context, Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { serviceContext } from "../../http/router";
import { listAgentCatalog } from "../../services/coding-agents/catalog";
import { listCodingAgents } from "../../services/coding-agents/list";
import type { PodView } from "../../services/pods/view";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { podTab } from "../components/pod-tab";
import type { PageContext } from "../layout";
import { AgentRows, type AgentsData, AgentsTab } from "../pages/pod-agents";
import { requireSignedIn } from "../session";

/**
 * A pod's Coding agents tab (docs/dashboard.md): the catalog (`GET /api/agents`) beside the pod's
 * agents (`GET /api/pods/{name}/agents`), and the rows alone for the live status while installing.
 */
export const podAgentsArea = new Hono<AppEnv>();

async function agentsData(page: PageContext, pod: PodView): Promise<AgentsData> {
  const { agents } = unwrap(
    await listCodingAgents({ ctx: page.ctx, teamId: page.caller.teamId, input: { name: pod.name } }),
  );
  return { catalog: unwrap(listAgentCatalog()).agents, agents };
}

podAgentsArea.get("/pods/:name/agents", requireSignedIn, async (c) => {
  const tab = await podTab(c);
  if ("notFound" in tab) return tab.notFound;
  return c.html(<AgentsTab page={tab.page} pod={tab.pod} data={await agentsData(tab.page, tab.pod)} />);
});

/** The rows fragment: no header to render, so no team list is read. */
podAgentsArea.get("/pods/:name/agents/rows", requireSignedIn, async (c: Context<AppEnv>) => {
  const page = { ctx: serviceContext(c), caller: c.get("caller"), base: c.env.PUBLIC_URL, teams: [] };
  const pod = await podForPage(page, c.req.param("name") ?? "");
  if (!pod) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  return c.html(<AgentRows pod={pod} data={await agentsData(page, pod)} />);
});
