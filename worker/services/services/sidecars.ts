import { and, eq, inArray, isNotNull } from "drizzle-orm";
import type { PodSidecars, SidecarState } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { podServices, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "../pods/events";

const WHY: Record<Exclude<SidecarState, "running"> | "missing", string> = {
  exited: "its sidecar container exited on the host",
  restarting: "its sidecar container keeps restarting on the host",
  missing: "its sidecar container is missing on the host",
};

/**
 * A host's reports of its running pods' database sidecars (`agent:services`) applied to the
 * service rows (docs/services.md "After the install"). Scoped by host id like every agent report:
 * only the services of pods placed on that host and `running` there are judged, and only installed
 * ones (a version reported; an install that failed stays as it ended). A `running` service whose
 * sidecar is not running, or absent, becomes `error` with the reason; an `error` one whose sidecar
 * runs again becomes `running`. A report that repeats what is stored writes nothing. Answers the
 * ids of the services that changed, for their alerts (alertOnService).
 */
export async function applySidecarReports(
  db: Db,
  hostId: string,
  reports: readonly PodSidecars[],
): Promise<string[]> {
  if (reports.length === 0) return [];
  const rows = await db
    .select({
      id: podServices.id,
      podId: podServices.podId,
      podName: pods.name,
      type: podServices.serviceType,
      status: podServices.status,
    })
    .from(podServices)
    .innerJoin(pods, eq(pods.id, podServices.podId))
    .where(
      and(
        eq(pods.hostId, hostId),
        eq(pods.status, "running"),
        inArray(podServices.status, ["running", "error"]),
        isNotNull(podServices.version),
      ),
    );
  const byPod = new Map<string, typeof rows>();
  for (const row of rows) byPod.set(row.podName, [...(byPod.get(row.podName) ?? []), row]);
  const changed: string[] = [];
  const statements = [];
  const now = nowIso();
  for (const report of reports) {
    for (const row of byPod.get(report.name) ?? []) {
      const state = report.services.find((s) => s.type === row.type)?.state ?? "missing";
      if (state === "running" && row.status === "error") {
        statements.push(
          db
            .update(podServices)
            .set({ status: "running", errorMsg: null, updatedAt: now })
            .where(and(eq(podServices.id, row.id), eq(podServices.status, "error"))),
          recordEventStatement(db, row.podId, "service_running", `${row.type} runs again`, {
            service_type: row.type,
          }),
        );
        changed.push(row.id);
      } else if (state !== "running" && row.status === "running") {
        const why = WHY[state];
        statements.push(
          db
            .update(podServices)
            .set({ status: "error", errorMsg: why, updatedAt: now })
            .where(and(eq(podServices.id, row.id), eq(podServices.status, "running"))),
          recordEventStatement(db, row.podId, "error", `${row.type} failed: ${why}`, {
            service_type: row.type,
          }),
        );
        changed.push(row.id);
      }
    }
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  return changed;
}
