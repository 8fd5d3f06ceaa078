import type { Readable } from "node:stream";
import { type BlobStore, httpByteStore } from "./blobs";

/**
 * The agent's side of the control plane's streamed transfers (worker/routes/agent-relay.ts): `fetch`
 * reads what a caller is uploading as it arrives, `upload` hands a file to the caller waiting for
 * it and resolves once the caller took every byte. Any failure (the other side gone or never come)
 * is `unavailable`; a 404 too, since the id came from the control plane itself.
 */
export interface RelayClient extends BlobStore {
  /**
   * A live stream of unknown length into the relay (`PUT /agent/relay/live/{id}`, chunked: a
   * followed log), resolving once the caller's side ended it; it fails when the caller went away.
   */
  live(id: string, body: Readable, signal?: AbortSignal): Promise<void>;
}

export function createRelayClient(apiUrl: string, agentToken: string): RelayClient {
  const common = { apiUrl, agentToken, what: "transfer", missing: "unavailable" } as const;
  const files = httpByteStore({ ...common, route: "/agent/relay/" });
  const live = httpByteStore({ ...common, route: "/agent/relay/live/" });
  return {
    fetch: files.fetch,
    upload: files.upload,
    live: async (id, body, signal) => {
      await live.upload(id, body, undefined, signal);
    },
  };
}
