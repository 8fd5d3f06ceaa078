import { createHash } from "node:crypto";
import { EDGE_HEADERS, EDGE_PROOF_TTL_S, signedText } from "../../shared/edge-proof";
import { type HttpResult, httpGet } from "./http";

/**
 * Signs a request to a host's ingress as the Worker's edge does (shared/edge-proof.ts): for tests
 * that look at one host's ingress on its own (the agent's tests, an ingress restart). A visitor's
 * view goes through the edge instead (the Worker's address, test/e2e/edge.test.ts).
 */
export function edgeHeaders(
  secret: string,
  r: { method?: string; host: string; path: string; client?: string; proto?: string },
): Record<string, string> {
  const p = {
    expires: Math.floor(Date.now() / 1000) + EDGE_PROOF_TTL_S,
    method: r.method ?? "GET",
    host: r.host,
    uri: r.path,
    client: r.client ?? "127.0.0.1",
    proto: r.proto ?? "http",
  };
  const proof = createHash("md5").update(signedText(p, secret)).digest("base64url");
  return {
    [EDGE_HEADERS.host]: p.host,
    [EDGE_HEADERS.client]: p.client,
    [EDGE_HEADERS.expires]: String(p.expires),
    [EDGE_HEADERS.proof]: proof,
    "x-forwarded-proto": p.proto,
  };
}

/** GET `path` of `host` from the ingress on `port`, signed with the host's edge secret. */
export function edgeGet(port: number, host: string, path: string, secret: string): Promise<HttpResult> {
  return httpGet(port, host, path, edgeHeaders(secret, { host, path }));
}
