import { EDGE_HEADERS, EDGE_PROOF_TTL_S, type ProofInput, signedText } from "../../shared/edge-proof";

/**
 * The proof's headers for one forwarded request (shared/edge-proof.ts): base64url MD5, no padding,
 * as nginx's secure_link compares it. MD5 is what secure_link offers; what makes it a proof is the
 * host's secret inside the hashed text and the short expiry, not MD5's collision resistance.
 */
export async function proofHeaders(
  p: Omit<ProofInput, "expires">,
  secret: string,
  nowMs = Date.now(),
): Promise<[string, string][]> {
  const expires = Math.floor(nowMs / 1000) + EDGE_PROOF_TTL_S;
  const digest = await crypto.subtle.digest(
    "MD5",
    new TextEncoder().encode(signedText({ ...p, expires }, secret)),
  );
  return [
    [EDGE_HEADERS.host, p.host],
    [EDGE_HEADERS.client, p.client],
    [EDGE_HEADERS.expires, String(expires)],
    [EDGE_HEADERS.proof, base64url(new Uint8Array(digest))],
  ];
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
