/** Who is calling and on which team: what every authenticated handler acts on. */
import type { UserView } from "./accounts";

export interface Caller {
  /** the account, as GET /api/auth/user shows it */
  user: UserView;
  /** the active team: the session user's active team, or the team an API token or connector grant is bound to */
  teamId: string;
  via: "session" | "api_token" | "connector";
  /** the session row behind a session or connector credential (logout ends it) */
  sessionId?: string;
  /** the API token behind an `ipk_` credential */
  apiTokenId?: string;
  /** the connector grant behind an OAuth access token (docs/connectors.md) */
  connectorId?: string;
  /** how the audit log names the credential: an API token's prefix, a connector's client name */
  credentialLabel?: string;
}
