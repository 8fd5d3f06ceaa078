import { dashboardRouter } from "./dashboard";
import type { AppEnv } from "./http/app-env";
import { auditTrail } from "./http/audit-trail";
import { errorResponse } from "./http/errors";
import { createFallbackHandler } from "./http/fallbacks";
import { requestContext } from "./http/middleware";
import { createRouter } from "./http/router";
import { affiliatesRouter } from "./routes/affiliates";
import { agentBackupsRouter } from "./routes/agent-backups";
import { agentBlobsRouter } from "./routes/agent-blobs";
import { agentConnectRouter } from "./routes/agent-connect";
import { agentRelayRouter } from "./routes/agent-relay";
import { agentTerminalRouter } from "./routes/agent-terminal";
import { alertsRouter } from "./routes/alerts";
import { apiTokensRouter } from "./routes/api-tokens";
import { auditRouter } from "./routes/audit";
import { authRouter } from "./routes/auth";
import { backupsRouter } from "./routes/backups";
import { billingRouter } from "./routes/billing";
import { catalogRouter } from "./routes/catalog";
import { codingAgentsRouter } from "./routes/coding-agents";
import { connectorsRouter } from "./routes/connectors";
import { oauthRouter } from "./routes/connectors/oauth";
import { openApiDocument } from "./routes/docs/openapi";
import { renderDocsPage } from "./routes/docs/page";
import { domainsRouter } from "./routes/domains";
import { feedbackRouter } from "./routes/feedback";
import { filesRouter } from "./routes/files";
import { gitRouter } from "./routes/git";
import { healthRouter } from "./routes/health";
import { importsRouter } from "./routes/imports";
import { insideRouter } from "./routes/inside";
import { invitationsRouter } from "./routes/invitations";
import { mcpRouter } from "./routes/mcp";
import { metricsRouter } from "./routes/metrics";
import { operatorHostsRouter } from "./routes/operator-hosts";
import { podsRouter } from "./routes/pods";
import { servicesRouter } from "./routes/services";
import { sshRouter } from "./routes/ssh";
import { sshKeysRouter } from "./routes/ssh-keys";
import { teamsRouter } from "./routes/teams";
import { terminalRouter } from "./routes/terminal";
import { zipRouter } from "./routes/zip";

export function createApp() {
  const app = createRouter();

  app.use("*", requestContext);
  // Every change through the API is recorded in its team's audit log (docs/audit.md).
  app.use("/api/*", auditTrail);

  app.route("/api/auth", authRouter);
  app.route("/api/teams", teamsRouter);
  app.route("/api/teams", alertsRouter);
  app.route("/api/teams", auditRouter);
  app.route("/api/invitations", invitationsRouter);
  app.route("/api/api-tokens", apiTokensRouter);
  // Connectors: OAuth grants to AI assistants (the consent page, the provider's endpoints under
  // /oauth and /.well-known) and the MCP server they reach with them.
  app.route("/api/connectors", connectorsRouter);
  app.route("/", oauthRouter);
  app.route("/mcp", mcpRouter);
  // A pod's capabilities, each its own router (routes/<capability>/) under the pod's path.
  app.route("/api/pods", podsRouter);
  app.route("/api/pods", sshRouter);
  app.route("/api/pods", insideRouter);
  app.route("/api/pods", zipRouter);
  app.route("/api/pods", filesRouter);
  app.route("/api/pods", metricsRouter);
  app.route("/api/pods", healthRouter);
  app.route("/api/pods", servicesRouter);
  app.route("/api/pods", domainsRouter);
  app.route("/api/pods", terminalRouter);
  // Feedback spans /api/pods/{name}/feedback, the public /api/feedback/{token} and /feedback/widget.js.
  app.route("/", feedbackRouter);
  // Git deployments span /api/pods/{name}/git, /api/pods/from-repo, /api/repos and /api/webhooks.
  app.route("/api", gitRouter);
  app.route("/api", codingAgentsRouter);
  app.route("/api", backupsRouter);
  // Billing spans /api/billing and Stripe's webhook at /api/webhooks/stripe.
  app.route("/api", billingRouter);
  // Affiliates span /api/affiliates and the public /api/affiliate/visit.
  app.route("/api", affiliatesRouter);
  app.route("/api/imports", importsRouter);
  app.route("/api/ssh-keys", sshKeysRouter);
  app.route("/api", catalogRouter);
  app.route("/agent/blobs", agentBlobsRouter);
  app.route("/agent/backups", agentBackupsRouter);
  app.route("/agent/relay", agentRelayRouter);
  app.route("/agent/terminal", agentTerminalRouter);
  app.route("/agent", agentConnectRouter);
  app.route("/operator/hosts", operatorHostsRouter);

  // A route that does no work: the floor the API benchmark compares against, and a liveness probe.
  // The dashboard (worker/dashboard/, docs/dashboard.md): pages under /app; the root sends a browser there.
  app.route("/app", dashboardRouter);
  app.get("/", (c) => c.redirect("/app", 302));

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
