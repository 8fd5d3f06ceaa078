import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import {
  FILE_UPLOAD_MAX_BYTES,
  JSON_BODY_MAX_BYTES,
  MULTIPART_OVERHEAD_BYTES,
  ZIP_UPLOAD_MAX_BYTES,
} from "../shared/limits";
import type { AppEnv } from "./http/app-env";
import { errorResponse } from "./http/errors";
import { createFallbackHandler } from "./http/fallbacks";
import { requestContext } from "./http/middleware";
import { createRouter } from "./http/router";
import { agentBlobsRouter } from "./routes/agent-blobs";
import { agentConnectRouter } from "./routes/agent-connect";
import { agentRelayRouter } from "./routes/agent-relay";
import { apiTokensRouter } from "./routes/api-tokens";
import { authRouter } from "./routes/auth";
import { catalogRouter } from "./routes/catalog";
import { openApiDocument } from "./routes/docs/openapi";
import { renderDocsPage } from "./routes/docs/page";
import { invitationsRouter } from "./routes/invitations";
import { podsRouter } from "./routes/pods";
import { podFilesRouter } from "./routes/pods/files";
import { podHealthRouter } from "./routes/pods/health";
import { podInsideRouter } from "./routes/pods/inside";
import { podMetricsRouter } from "./routes/pods/metrics";
import { podSshRouter } from "./routes/pods/ssh";
import { podZipRouter } from "./routes/pods/zip";
import { sshKeysRouter } from "./routes/ssh-keys";
import { teamsRouter } from "./routes/teams";

/**
 * The routes that take files read their multipart forms as they arrive (lib/streamed-form.ts) and
 * count what they read themselves, so only a declared length over their limit is refused up front.
 * hono's bodyLimit would read a body without a Content-Length whole into memory to count it.
 */
const STREAMED_FORM_ROUTES: [RegExp, number][] = [
  [/^\/api\/pods\/[^/]+\/files\/upload$/, FILE_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES],
  [/^\/api\/pods\/[^/]+\/zip$/, ZIP_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES],
  [/^\/api\/pods\/from-zip$/, ZIP_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES],
];
const tooLarge = (c: Context, maxSize: number) =>
  c.json({ error: `request body too large: the limit is ${maxSize} bytes` }, 413);
/** JSON bodies are small: held and counted. */
const jsonBodyLimit = bodyLimit({
  maxSize: JSON_BODY_MAX_BYTES,
  onError: (c) => tooLarge(c, JSON_BODY_MAX_BYTES),
});
const bodyLimitFor: MiddlewareHandler = (c, next) => {
  const streamed = STREAMED_FORM_ROUTES.find(([route]) => route.test(c.req.path));
  if (!streamed) return jsonBodyLimit(c, next);
  const declared = Number(c.req.header("content-length"));
  return declared > streamed[1] ? Promise.resolve(tooLarge(c, streamed[1])) : next();
};

export function createApp() {
  const app = createRouter();

  app.use("*", requestContext);
  app.use("/api/*", bodyLimitFor);

  app.route("/api/auth", authRouter);
  app.route("/api/teams", teamsRouter);
  app.route("/api/invitations", invitationsRouter);
  app.route("/api/api-tokens", apiTokensRouter);
  app.route("/api/pods", podsRouter);
  app.route("/api/pods", podSshRouter);
  app.route("/api/pods", podInsideRouter);
  app.route("/api/pods", podZipRouter);
  app.route("/api/pods", podFilesRouter);
  app.route("/api/pods", podMetricsRouter);
  app.route("/api/pods", podHealthRouter);
  app.route("/api/ssh-keys", sshKeysRouter);
  app.route("/api", catalogRouter);
  app.route("/agent/blobs", agentBlobsRouter);
  app.route("/agent/relay", agentRelayRouter);
  app.route("/agent", agentConnectRouter);

  // A route that does no work: the floor the API benchmark compares against, and a liveness probe.
  app.get("/health", (c) => c.json({ status: "ok" }));

  let doc: ReturnType<typeof openApiDocument> | undefined;
  const document = (base: string) => {
    doc ??= openApiDocument(app, base);
    return doc;
  };
  app.get("/openapi.json", (c) => c.json(document(c.env.PUBLIC_URL)));
  app.get("/docs", (c) => c.html(renderDocsPage(document(c.env.PUBLIC_URL))));

  const fallback = createFallbackHandler(() => app.routes);
  app.notFound(fallback);
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

export type App = ReturnType<typeof createApp>;
export type { AppEnv };
