import { OAuthAuthorizationServer } from "@cloudflare/workers-oauth-provider";
import type { Bindings } from "../../env";
import { DAY } from "../../lib/time";

/** A connector session lasts 30 days, like a login session (the spec's "full power, 30 days"). */
export const CONNECTOR_TTL_S = (30 * DAY) / 1000;

/** Paths of the OAuth endpoints (advertised in /.well-known/oauth-authorization-server). */
export const OAUTH_PATHS = {
  authorize: "/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
} as const;

/** Every token is issued for the whole API: `/api/*` and `/mcp` alike (docs/connectors.md). */
export const resourceOf = (env: Pick<Bindings, "PUBLIC_URL">) => new URL(env.PUBLIC_URL).origin;

/** What a grant carries in its encrypted props: whose it is, the team it acts on, and our row. */
export interface ConnectorProps {
  userId: string;
  teamId: string;
  connectorId: string;
}

const servers = new Map<string, OAuthAuthorizationServer<Bindings>>();

/**
 * The authorization server (@cloudflare/workers-oauth-provider's role API), one per base URL: the
 * issuer and the one protected resource are PUBLIC_URL's origin. It serves the metadata, token
 * (code, refresh, revocation) and dynamic registration endpoints; the consent page is ours
 * (routes/connectors/authorize.ts). Public clients must use PKCE with S256.
 */
export function authorizationServer(env: Pick<Bindings, "PUBLIC_URL">): OAuthAuthorizationServer<Bindings> {
  const issuer = resourceOf(env);
  let server = servers.get(issuer);
  if (!server) {
    server = new OAuthAuthorizationServer<Bindings>({
      issuer,
      resources: [issuer],
      authorizeEndpoint: OAUTH_PATHS.authorize,
      tokenEndpoint: OAUTH_PATHS.token,
      clientRegistrationEndpoint: OAUTH_PATHS.register,
      accessTokenTTL: CONNECTOR_TTL_S,
      refreshTokenTTL: CONNECTOR_TTL_S,
      // One grant is full power on one team: there is nothing narrower to ask for.
      scopesSupported: ["pods"],
    });
    servers.set(issuer, server);
  }
  return server;
}
