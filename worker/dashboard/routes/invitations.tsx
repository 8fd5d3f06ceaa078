import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/router";
import { describeInvitation } from "../../services/invitations/invitations";
import { ErrorPage } from "../components/error-page";
import { pageContext } from "../layout";
import { InvitationPage, InvitationSignedOutPage } from "../pages/invitation";
import { signedInCaller } from "../session";

/**
 * The page an invitation mail links to (docs/dashboard.md): public, as `GET /api/invitations/{token}`
 * is. The token is the invitation's secret: its path is redacted from the request log (SECRET_PATHS
 * in worker/http/middleware.ts) and the pages' Referrer-Policy keeps it on this origin.
 */
export const invitationsArea = new Hono<AppEnv>();

invitationsArea.get("/invitations/:token", async (c) => {
  const token = c.req.param("token");
  const gone = () =>
    c.html(
      <ErrorPage status={404} message="This invitation is not valid: unknown, expired or already used." />,
      404,
    );
  if (token.length > 200) return gone();
  const found = await describeInvitation(serviceContext(c), token);
  if (!found.ok) return gone();
  const caller = await signedInCaller(c);
  if (!caller) return c.html(<InvitationSignedOutPage token={token} invitation={found.value} />);
  c.set("caller", caller);
  return c.html(<InvitationPage page={await pageContext(c)} token={token} invitation={found.value} />);
});
