import { asc, eq, sql } from "drizzle-orm";
import { DEPLOY_LOG_MAX_BYTES } from "../../../shared/protocol/messages";
import type { Db } from "../../db/client";
import { deploymentLogChunks } from "../../db/schema";

/**
 * Build logs: the agent sends a running deploy's output as numbered chunks (`agent:deploy-log`),
 * which the host's HostAgent object stores here as they arrive. A chunk sent twice (after a
 * reconnect) is stored once (primary key (deployment, seq)); a chunk from a host that does not
 * hold the deployment's pod is dropped; once a log holds DEPLOY_LOG_MAX_BYTES, later chunks are
 * dropped and the assembled log ends with a line saying it was cut.
 */
export async function recordDeployLog(
  db: Db,
  hostId: string,
  message: { deploymentId: string; seq: number; chunk: string },
): Promise<void> {
  const bytes = new TextEncoder().encode(message.chunk).byteLength;
  await db.run(sql`INSERT OR IGNORE INTO deployment_log_chunks (deployment_id, seq, chunk, bytes)
    SELECT ${message.deploymentId}, ${message.seq}, ${message.chunk}, ${bytes}
    WHERE EXISTS (
        SELECT 1 FROM deployments d JOIN pods p ON p.id = d.pod_id
        WHERE d.id = ${message.deploymentId} AND p.host_id = ${hostId})
      AND (SELECT COALESCE(SUM(bytes), 0) FROM deployment_log_chunks
           WHERE deployment_id = ${message.deploymentId}) < ${DEPLOY_LOG_MAX_BYTES}`);
}

export const TRUNCATED_LINE = `\n[build log cut at ${DEPLOY_LOG_MAX_BYTES / 1024 / 1024} MiB]\n`;

/** The chunks from `fromSeq` on, in order (the streaming endpoint reads on from where it was). */
export async function logChunks(db: Db, deploymentId: string, fromSeq = 0) {
  return db
    .select({ seq: deploymentLogChunks.seq, chunk: deploymentLogChunks.chunk })
    .from(deploymentLogChunks)
    .where(
      sql`${deploymentLogChunks.deploymentId} = ${deploymentId} AND ${deploymentLogChunks.seq} >= ${fromSeq}`,
    )
    .orderBy(asc(deploymentLogChunks.seq));
}

/** The whole log as one string, at most DEPLOY_LOG_MAX_BYTES, with `redact` (the token) masked. */
export async function assembleLog(db: Db, deploymentId: string, redact?: string): Promise<string> {
  const rows = await db
    .select({ chunk: deploymentLogChunks.chunk })
    .from(deploymentLogChunks)
    .where(eq(deploymentLogChunks.deploymentId, deploymentId))
    .orderBy(asc(deploymentLogChunks.seq));
  let log = rows.map((r) => r.chunk).join("");
  const encoded = new TextEncoder().encode(log);
  if (encoded.byteLength > DEPLOY_LOG_MAX_BYTES)
    log =
      new TextDecoder().decode(encoded.slice(0, DEPLOY_LOG_MAX_BYTES)).replace(/\uFFFD$/, "") +
      TRUNCATED_LINE;
  return redactSecret(log, redact);
}

/** The agent redacts the token already; the Worker masks it again before anything leaves. */
export const redactSecret = (text: string, secret: string | undefined) =>
  secret && secret.length >= 4 ? text.split(secret).join("***") : text;
