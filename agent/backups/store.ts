import type { Readable } from "node:stream";
import { z } from "zod";
import { type Built, lazy } from "../../shared/protocol/lazy";
import { AgentError } from "../errors";
import { httpByteStore } from "../transfer/blobs";

/**
 * The agent's side of the control plane's backup objects (`PUT`/`GET /agent/backups/{backupId}`,
 * host token; the Worker pipes a PUT into R2 and answers 201 `{bytes, sha256}` of what it stored).
 */
export interface BackupStore {
  /** the archive as a stream, with its Content-Length */
  read(backupId: string, signal?: AbortSignal): Promise<{ body: Readable; size: number }>;
  /** stream the archive (length unknown up front: chunked); what the control plane says it stored */
  write(backupId: string, body: Readable, signal?: AbortSignal): Promise<StoredFacts>;
}

const StoredFacts = lazy(() =>
  z.object({
    bytes: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  }),
);
export type StoredFacts = Built<typeof StoredFacts>;

export function createBackupStore(apiUrl: string, agentToken: string): BackupStore {
  const bytes = httpByteStore({
    apiUrl,
    agentToken,
    route: "/agent/backups/",
    what: "backup",
    missing: "not_found",
  });
  return {
    read: (backupId, signal) => bytes.fetch(backupId, signal),
    async write(backupId, body, signal) {
      const text = await bytes.upload(backupId, body, undefined, signal);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const facts = StoredFacts().safeParse(parsed);
      if (!facts.success)
        throw new AgentError(
          "unavailable",
          `backup ${backupId}: the control plane's answer has no {bytes, sha256}`,
        );
      return facts.data;
    },
  };
}
