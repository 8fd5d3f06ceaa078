import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { TerminalPage } from "../pages/pod/terminal";
import { requireSignedIn } from "../session";

/**
 * A pod's Terminal tab (docs/dashboard.md "Terminal"). The page itself asks the host nothing: the
 * browser opens the session through the API's WebSocket, which checks the session cookie, the
 * Origin and the pod's team again.
 */
export const podTerminalRouter = new Hono<AppEnv>();

podTerminalRouter.get("/pods/:name/terminal", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  return c.html(<TerminalPage page={page} pod={pod} />);
});
