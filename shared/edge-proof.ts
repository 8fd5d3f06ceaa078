/**
 * The edge's proof (docs/edge.md "The proof"): every request the Worker's edge router forwards to a
 * host's ingress carries an MD5 over what it asks for, keyed by a secret only the Worker and that
 * host know, and the host's nginx checks it with its built-in `secure_link` module — no extra hop.
 * A request without a valid, unexpired proof is answered 403 by the ingress, so nobody reaches a
 * pod by going around the edge, and the visitor's address the edge vouches for is signed with it.
 *
 * The secret is derived from the host's agent token: the Worker keeps only the token's SHA-256
 * (`hosts.agent_token_hash`), the agent has the token and hashes it the same way. Rotating the
 * token (`npm run host:add -- --rotate`) rotates the secret; it never travels on a request.
 */

/** headers the edge sets on the request to the host (the ingress strips them before the app) */
export const EDGE_HEADERS = {
  /** the visitor's host name: the ingress serves the pod whose vhost names it */
  host: "x-podhost-host",
  /** the visitor's address as the edge saw it (CF-Connecting-IP), given to the app as X-Forwarded-For */
  client: "x-podhost-client-ip",
  /** unix seconds after which the proof is refused */
  expires: "x-podhost-edge-expires",
  /** base64url MD5 of `signedText(...)`, as nginx's secure_link_md5 computes it */
  proof: "x-podhost-edge-proof",
} as const;

/** how long a proof stays valid: a request's clock skew between the Worker and a host, not a session */
export const EDGE_PROOF_TTL_S = 60;

/** The secret's derivation from the token's SHA-256 hex (what the Worker stores); hex, safe to put in nginx config. */
export async function edgeSecretFromTokenHash(tokenHashHex: string): Promise<string> {
  const bytes = new TextEncoder().encode(`podhost-edge-proof:${tokenHashHex}`);
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}

/** The agent's side: the same secret from the token itself. */
export async function edgeSecretFromToken(token: string): Promise<string> {
  const hash = toHex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return edgeSecretFromTokenHash(hash);
}

export interface ProofInput {
  expires: number;
  method: string;
  /** the visitor's host name (lowercase, no port) */
  host: string;
  /** path and query exactly as sent to the ingress (nginx's $request_uri) */
  uri: string;
  /** the visitor's address */
  client: string;
  /** the visitor's scheme, "https" or "http" (X-Forwarded-Proto) */
  proto: string;
}

/**
 * The text the proof is the MD5 of; nginx's `secure_link_md5` in agent/ingress/vhost.ts builds the
 * same string from the request's variables. `|` cannot occur in a host name, a method, an address
 * or a scheme, so fields cannot be shifted into one another.
 */
export function signedText(p: ProofInput, secret: string): string {
  return `${p.expires}|${p.method}|${p.host}|${p.uri}|${p.client}|${p.proto}|${secret}`;
}

function toHex(buffer: ArrayBuffer): string {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
