import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { getPodEnv } from "../../services/inside/env";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { type EnvData, EnvPage } from "../pages/pod/env";
import { requireSignedIn } from "../session";

/**
 * A pod's Environment tab (docs/dashboard.md "Environment"). The file is read through the API's own
 * verb, and only its names reach the page: values are secrets, fetched by the browser from the API
 * when the user presses "Reveal values".
 */
export const podEnvRouter = new Hono<AppEnv>();

podEnvRouter.get("/pods/:name/env", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  const read = await getPodEnv({ ctx: page.ctx, teamId: page.caller.teamId, input: { name: pod.name } });
  const keys: EnvData["keys"] = read.ok
    ? { ok: true, path: read.value.path, names: Object.keys(read.value.vars) }
    : { ok: false, error: read.message };
  return c.html(<EnvPage page={page} data={{ pod, keys }} />);
});
