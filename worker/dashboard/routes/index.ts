import type { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { affiliatesPages } from "./affiliates";
import { billingPages } from "./billing";
import { invitationsArea } from "./invitations";
import { newPodArea } from "./new-pod";
import { podAgentsArea } from "./pod-agents";
import { podBackupsArea } from "./pod-backups";
import { podDatabasesArea } from "./pod-databases";
import { podDeploysArea } from "./pod-deploys";
import { podDomainsArea } from "./pod-domains";
import { podEnvRouter } from "./pod-env";
import { podEventsArea } from "./pod-events";
import { podFeedbackArea } from "./pod-feedback";
import { podFilesRouter } from "./pod-files";
import { podLogsRouter } from "./pod-logs";
import { podMetricsRouter } from "./pod-metrics";
import { podOverviewRouter } from "./pod-overview";
import { podTerminalRouter } from "./pod-terminal";
import { teamPages } from "./team";
import { teamAlertsPages } from "./team-alerts";
import { teamAuditPages } from "./team-audit";

/**
 * The dashboard's areas, one router each (a file per area in this folder: the pod's tabs, the new
 * pod page, team, account, billing …), mounted at /app by ../index.tsx. Each page of an area goes
 * behind `requireSignedIn` and renders from `pageContext(c)`.
 */
export const dashboardAreas: Hono<AppEnv>[] = [
  newPodArea,
  podDeploysArea,
  podDatabasesArea,
  podBackupsArea,
  teamPages,
  teamAlertsPages,
  teamAuditPages,
  billingPages,
  affiliatesPages,
  podDomainsArea,
  podFeedbackArea,
  podAgentsArea,
  podEventsArea,
  invitationsArea,
  podOverviewRouter,
  podFilesRouter,
  podEnvRouter,
  podTerminalRouter,
  podLogsRouter,
  podMetricsRouter,
];
