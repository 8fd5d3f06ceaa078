import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { listChannels, listDeliveries } from "../../services/alerts/channels";
import { listAlertEvents } from "../../services/alerts/rules";
import { getTeam } from "../../services/teams/teams";
import { pageContext } from "../layout";
import { DELIVERIES_SHOWN, TeamAlertsPage } from "../pages/team-alerts";
import { requireSignedIn } from "../session";

/**
 * The active team's alerts (docs/dashboard.md "Alerts"): channels, event switches and the delivery
 * history, read with the verbs `/api/teams/{id}/alerts/*` calls. They are the owner's: a member gets
 * the page with a note and none of the team's channels (the verbs' own 403).
 */
export const teamAlertsPages = new Hono<AppEnv>();

teamAlertsPages.get("/team/alerts", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const { ctx, caller } = page;
  const team = unwrap(await getTeam(ctx, caller.user.id, caller.teamId));
  if (team.role !== "owner") return c.html(<TeamAlertsPage page={page} team={team} data={null} />);
  const [channels, events, deliveries] = await Promise.all([
    listChannels(ctx, caller.user.id, team.id),
    listAlertEvents(ctx, caller.user.id, team.id),
    listDeliveries(ctx, caller.user.id, team.id, { limit: DELIVERIES_SHOWN }),
  ]);
  const data = { channels: unwrap(channels), events: unwrap(events), deliveries: unwrap(deliveries) };
  return c.html(<TeamAlertsPage page={page} team={team} data={data} />);
});
