import { type BlobStore, httpByteStore } from "./blobs";

/**
 * The agent's side of the control plane's streamed transfers (worker/routes/agent-relay.ts): `fetch`
 * reads what a caller is uploading as it arrives, `upload` hands a file to the caller waiting for
 * it and resolves once the caller took every byte. Any failure (the other side gone or never come)
 * is `unavailable`; a 404 too, since the id came from the control plane itself.
 */
export type RelayClient = BlobStore;

export const createRelayClient = (apiUrl: string, agentToken: string): RelayClient =>
  httpByteStore({ apiUrl, agentToken, route: "/agent/relay/", what: "transfer", missing: "unavailable" });
