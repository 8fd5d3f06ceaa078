import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { DeploymentStatus, DeploymentTrigger } from "../../db/schema";
import { type PodSet, podSetSql } from "../metrics/sparklines";

/** A pod's newest deployment, as the pods list shows it. */
export interface LastDeployment {
  id: string;
  status: DeploymentStatus;
  trigger: DeploymentTrigger;
  created_at: string;
  finished_at: string | null;
}

/**
 * The statement behind `lastDeployments`, a query builder to run in a `db.batch` beside others
 * (`lastDeploymentsFromRows` reads its answer): per pod one seek on `deployments_pod_created_idx`
 * (pod_id, created_at), however long its history.
 */
export function lastDeploymentsStatement(db: Db, pods: PodSet) {
  return db
    .select({
      podId: sql<string>`d.pod_id`,
      id: sql<string>`d.id`,
      status: sql<DeploymentStatus>`d.status`,
      trigger: sql<DeploymentTrigger>`d.trigger`,
      created_at: sql<string>`d.created_at`,
      finished_at: sql<string | null>`d.finished_at`,
    })
    .from(sql`(${podSetSql(pods)}) AS p
      JOIN deployments AS d ON d.id = (
        SELECT id FROM deployments WHERE pod_id = p.value ORDER BY created_at DESC LIMIT 1
      )`);
}

/** `lastDeploymentsStatement`'s rows as a map by pod id. */
export function lastDeploymentsFromRows(
  rows: readonly (LastDeployment & { podId: string })[],
): Map<string, LastDeployment> {
  const last = new Map<string, LastDeployment>();
  for (const { podId, ...deployment } of rows) last.set(podId, deployment);
  return last;
}

/**
 * The newest deployment of each of many pods, in one query for a whole page of the pods list (the
 * ids travel as one JSON parameter: D1 binds at most 100). Pods never deployed are absent.
 */
export async function lastDeployments(db: Db, pods: PodSet): Promise<Map<string, LastDeployment>> {
  if (Array.isArray(pods) && pods.length === 0) return new Map();
  return lastDeploymentsFromRows(await lastDeploymentsStatement(db, pods));
}
