import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { listApiTokens } from "../../services/api-tokens/api-tokens";
import { listConnectors } from "../../services/connectors/grants";
import { listInvitations } from "../../services/invitations/invitations";
import { listSshKeys } from "../../services/ssh-keys/ssh-keys";
import { listMembers } from "../../services/teams/members";
import { getTeam } from "../../services/teams/teams";
import { pageContext } from "../layout";
import { AccountPage } from "../pages/account";
import { TeamPage } from "../pages/team";
import { requireSignedIn } from "../session";

/** The active team's page and the account's page. */
export const teamPages = new Hono<AppEnv>();

teamPages.get("/team", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const userId = page.caller.user.id;
  const teamId = page.caller.teamId;
  const team = unwrap(await getTeam(page.ctx, userId, teamId));
  const [members, invitations] = await Promise.all([
    listMembers(page.ctx, userId, teamId),
    team.role === "owner" ? listInvitations(page.ctx, userId, teamId) : null,
  ]);
  const rows = unwrap(members).map((r) => ({
    user_id: r.member.userId,
    name: r.name,
    email: r.email,
    role: r.member.role,
    joined_at: r.member.joinedAt,
  }));
  return c.html(
    <TeamPage
      page={page}
      team={team}
      members={rows}
      invitations={invitations ? unwrap(invitations) : null}
    />,
  );
});

teamPages.get("/account", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const userId = page.caller.user.id;
  const [tokens, keys, connectors] = await Promise.all([
    listApiTokens(page.ctx, userId),
    listSshKeys(page.ctx, userId),
    listConnectors(page.ctx, userId),
  ]);
  return c.html(<AccountPage page={page} tokens={tokens} keys={keys} connectors={connectors} />);
});

/** The user menu's "API tokens" link lands on the account page's tokens section. */
teamPages.get("/account/tokens", (c) => c.redirect("/app/account#tokens", 302));
