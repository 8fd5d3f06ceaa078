import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../http/app-env";
import { ApiError } from "../http/errors";
import { serviceContext } from "../http/router";
import { assetFile } from "./assets";
import { ErrorPage } from "./components/error-page";
import { StatusBadge } from "./components/pod-bits";
import { podForPage } from "./components/pod-page";
import { pageContext } from "./layout";
import { loadPodsPage, PAGE_SIZE, PODS_TITLE, PodRows, PodsListBody } from "./pages/pods-list";
import {
  ForgotPasswordPage,
  RegisterPage,
  ResetPasswordPage,
  SignInPage,
  VerifyEmailPage,
} from "./pages/sign-in";
import { dashboardAreas } from "./routes";
import { dashboardHeaders, noStore, ownHostOnly } from "./security";
import { requireSignedIn, safeNext, signedInCaller } from "./session";
import { streamPage } from "./stream-page";

/**
 * The dashboard (docs/dashboard.md): server-rendered pages under /app, on the API's own origin.
 * A page is rendered with the data it shows, read through the same service verbs the API's routes
 * call; every change a page makes is a call of the public API from the page (components/api-form).
 */
export const dashboardRouter = new Hono<AppEnv>();

dashboardRouter.use("*", ownHostOnly);

/** Our scripts and styles and the vendored libraries, by content-hashed URL (./assets.ts). */
dashboardRouter.get("/assets/:name", (c) => {
  const file = assetFile(c.req.param("name"));
  if (!file) return c.json({ error: "asset not found" }, 404);
  c.header("Content-Type", `${file.type}; charset=utf-8`);
  c.header("Cache-Control", c.req.query("v") ? "public, max-age=31536000, immutable" : "no-cache");
  c.header("X-Content-Type-Options", "nosniff");
  return c.body(file.text);
});

dashboardRouter.use("*", dashboardHeaders, noStore);

// Signed-out pages. Signed in, sign-in and register go straight on.
dashboardRouter.get("/sign-in", async (c) => {
  const next = safeNext(c.req.query("next"));
  if (await signedInCaller(c)) return c.redirect(next, 302);
  return c.html(<SignInPage next={next} />);
});
dashboardRouter.get("/register", async (c) => {
  const next = safeNext(c.req.query("next"));
  if (await signedInCaller(c)) return c.redirect(next, 302);
  return c.html(<RegisterPage next={next} />);
});
dashboardRouter.get("/forgot-password", (c) => c.html(<ForgotPasswordPage />));
dashboardRouter.get("/reset-password", (c) =>
  c.html(<ResetPasswordPage token={c.req.query("token") ?? ""} />),
);
dashboardRouter.get("/verify-email", (c) => c.html(<VerifyEmailPage token={c.req.query("token") ?? ""} />));

const pageQuery = (c: { req: { query(k: string): string | undefined } }) => {
  const offset = Number.parseInt(c.req.query("offset") ?? "0", 10);
  const limit = Number.parseInt(c.req.query("limit") ?? String(PAGE_SIZE), 10);
  return {
    offset: Number.isFinite(offset) && offset > 0 ? offset : 0,
    limit: Number.isFinite(limit) && limit > 0 && limit <= 100 ? limit : PAGE_SIZE,
  };
};

dashboardRouter.get("/", requireSignedIn, (c) => {
  // the header's teams and the list are independent reads: both at once, while the head is sent
  const body = Promise.all([
    pageContext(c),
    loadPodsPage(serviceContext(c), c.get("caller").teamId, pageQuery(c)),
  ]).then(([page, list]) => <PodsListBody page={page} list={list} />);
  return streamPage(c, { title: PODS_TITLE }, body);
});

dashboardRouter.get("/pods/rows", requireSignedIn, async (c) => {
  const page = { ctx: serviceContext(c), caller: c.get("caller"), base: c.env.PUBLIC_URL, teams: [] };
  const list = await loadPodsPage(page.ctx, page.caller.teamId, pageQuery(c));
  return c.html(<PodRows page={page} list={list} />);
});

/** The live status badge of a pod's page (its 1.5 s poll). */
dashboardRouter.get("/pods/:name/status", requireSignedIn, async (c) => {
  const page = { ctx: serviceContext(c), caller: c.get("caller"), base: c.env.PUBLIC_URL, teams: [] };
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  return c.html(<StatusBadge status={pod.status} />);
});

// Each area of the dashboard is a router of its own (./routes/), mounted here.
for (const area of dashboardAreas) dashboardRouter.route("/", area);

// Last: any other path under /app is the dashboard's own 404 page (a sub-app's notFound is not
// consulted once it is mounted; the API's JSON 404 would reach a browser).
dashboardRouter.all("*", (c) => c.html(<ErrorPage status={404} message="There is no such page." />, 404));
dashboardRouter.onError((err, c) => {
  const status = (err instanceof ApiError ? err.status : 500) as ContentfulStatusCode;
  if (status >= 500) console.error(JSON.stringify({ requestId: c.get("requestId"), error: String(err) }));
  const message = status >= 500 ? `Our side failed (request ${c.get("requestId")}); try again.` : err.message;
  return c.html(<ErrorPage status={status} message={message} />, status);
});
