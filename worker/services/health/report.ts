import { and, eq, ne } from "drizzle-orm";
import { Diagnosis } from "../../../shared/protocol/health";
import type { Db } from "../../db/client";
import { pods } from "../../db/schema";
import { recordEventStatement } from "../pods/events";

/** The stored JSON string of a pod's diagnosis, read back (null when absent or unreadable). */
export function parseDiagnosis(stored: string | null): Diagnosis | null {
  if (!stored) return null;
  try {
    const parsed = Diagnosis().safeParse(JSON.parse(stored));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export interface HealthChanges {
  /** pods whose app has a diagnosis now and had none */
  unhealthy: string[];
  /** pods whose diagnosis cleared */
  recovered: string[];
}

/**
 * A host's app health reports into `pods.app_health_diagnosis` (the JSON string the Pod shows).
 * Scoped by host id like every agent report: only pods placed on that host change. A diagnosis
 * that appears (or changes its class) is recorded as a `health_diagnosis` event, a cleared one as
 * `health_recovered`; a report that repeats what is stored writes nothing. Answers the pods whose app
 * became unhealthy (no diagnosis before) and those that recovered, for their alerts.
 */
export async function applyHealthReports(
  db: Db,
  hostId: string,
  reports: readonly { name: string; diagnosis: Diagnosis | null }[],
): Promise<HealthChanges> {
  const changes: HealthChanges = { unhealthy: [], recovered: [] };
  if (reports.length === 0) return changes;
  const own = await db
    .select({ id: pods.id, name: pods.name, stored: pods.appHealthDiagnosis })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), ne(pods.status, "deleted")));
  const byName = new Map(own.map((p) => [p.name, p]));
  const statements = [];
  for (const { name, diagnosis } of reports) {
    const pod = byName.get(name);
    if (!pod) continue;
    const next = diagnosis ? JSON.stringify(diagnosis) : null;
    if (next === pod.stored) continue;
    statements.push(db.update(pods).set({ appHealthDiagnosis: next }).where(eq(pods.id, pod.id)));
    const before = parseDiagnosis(pod.stored);
    if (diagnosis && !pod.stored) changes.unhealthy.push(pod.id);
    if (!diagnosis && pod.stored) changes.recovered.push(pod.id);
    if (diagnosis && before?.class !== diagnosis.class) {
      statements.push(
        recordEventStatement(db, pod.id, "health_diagnosis", `app problem found: ${diagnosis.title}`, {
          class: diagnosis.class,
          auto_fixable: diagnosis.auto_fixable,
          ...(diagnosis.fix_action ? { fix_action: diagnosis.fix_action } : {}),
        }),
      );
    } else if (!diagnosis && before) {
      statements.push(
        recordEventStatement(db, pod.id, "health_recovered", "the app answers again", {
          class: before.class,
        }),
      );
    }
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  return changes;
}
