import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { DeploymentStatus, DeploymentTrigger } from "../../db/schema";

/** A pod's newest deployment, as the pods list shows it. */
export interface LastDeployment {
  id: string;
  status: DeploymentStatus;
  trigger: DeploymentTrigger;
  created_at: string;
  finished_at: string | null;
}

/**
 * The newest deployment of each of many pods, in one query for a whole page of the pods list: per
 * pod one seek on `deployments_pod_created_idx` (pod_id, created_at), however long its history.
 * The ids travel as one JSON parameter (D1 binds at most 100). Pods never deployed are absent.
 */
export async function lastDeployments(
  db: Db,
  podIds: readonly string[],
): Promise<Map<string, LastDeployment>> {
  const last = new Map<string, LastDeployment>();
  if (podIds.length === 0) return last;
  const rows = await db.all<LastDeployment & { pod_id: string }>(sql`
    SELECT d.pod_id, d.id, d.status, d.trigger, d.created_at, d.finished_at
    FROM json_each(${JSON.stringify(podIds)}) AS p
    JOIN deployments AS d ON d.id = (
      SELECT id FROM deployments WHERE pod_id = p.value ORDER BY created_at DESC LIMIT 1
    )`);
  for (const { pod_id, ...deployment } of rows) last.set(pod_id, deployment);
  return last;
}
