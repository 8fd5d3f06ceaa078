import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { listDomains } from "../../services/domains/list";
import { podTab } from "../components/pod-tab";
import { DomainsTab } from "../pages/pod-domains";
import { requireSignedIn } from "../session";

/** A pod's Domains tab (docs/dashboard.md): its custom domains, read as `GET /api/pods/{name}/domains` does. */
export const podDomainsArea = new Hono<AppEnv>();

podDomainsArea.get("/pods/:name/domains", requireSignedIn, async (c) => {
  const tab = await podTab(c);
  if ("notFound" in tab) return tab.notFound;
  const { page, pod } = tab;
  const { domains } = unwrap(
    await listDomains({ ctx: page.ctx, teamId: page.caller.teamId, input: { name: pod.name } }),
  );
  return c.html(<DomainsTab page={page} pod={pod} domains={domains} />);
});
