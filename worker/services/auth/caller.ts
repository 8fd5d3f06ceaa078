/** Who is calling and on which team: what every authenticated handler acts on. */
export interface Caller {
  user: { id: string; email: string; name: string };
  /** the active team: the session user's active team, or the team an API token is bound to */
  teamId: string;
  via: "session" | "api_token" | "connector";
  /** the session row behind a session or connector credential (logout ends it) */
  sessionId?: string;
  /** the API token behind an `ipk_` credential */
  apiTokenId?: string;
}
