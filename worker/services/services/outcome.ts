import { and, eq } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import type { PodLimits } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { podServices, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "../pods/events";
import { limitsOf } from "../pods/spec";

/** What the pod-service workflow needs to ask the host; the password stays sealed here (step outputs are stored). */
export interface InstallJob {
  serviceId: string;
  podId: string;
  podName: string;
  hostId: string;
  type: "mysql" | "postgresql" | "redis";
  passwordEncrypted: string;
  limits: PodLimits;
}

/**
 * The install to run, or why there is none: the row is gone (the pod was deleted) or no longer
 * `installing` (a replayed instance), or the pod lost its host.
 */
export async function loadInstallJob(
  db: Db,
  serviceId: string,
): Promise<{ kind: "run"; job: InstallJob } | { kind: "skip"; reason: string; fail?: boolean }> {
  const [row] = await db
    .select({ service: podServices, pod: pods })
    .from(podServices)
    .innerJoin(pods, eq(pods.id, podServices.podId))
    .where(eq(podServices.id, serviceId))
    .limit(1);
  if (!row) return { kind: "skip", reason: "the service was removed" };
  const { service, pod } = row;
  if (service.status !== "installing") return { kind: "skip", reason: `the service is ${service.status}` };
  const plan = findPlan(pod.planSlug);
  if (!pod.hostId || !plan)
    return { kind: "skip", reason: `pod ${pod.name} has no host or plan`, fail: true };
  return {
    kind: "run",
    job: {
      serviceId,
      podId: pod.id,
      podName: pod.name,
      hostId: pod.hostId,
      type: service.serviceType,
      passwordEncrypted: service.passwordEncrypted,
      limits: limitsOf(plan),
    },
  };
}

/** `installing` → `running` with what the server reported, and the `service_running` event. */
export async function recordInstalled(
  db: Db,
  job: InstallJob,
  reported: { version: string; port: number },
): Promise<void> {
  const updated = await db
    .update(podServices)
    .set({ status: "running", version: reported.version, port: reported.port, updatedAt: nowIso() })
    .where(and(eq(podServices.id, job.serviceId), eq(podServices.status, "installing")))
    .returning({ id: podServices.id });
  if (updated.length === 0) return;
  await recordEventStatement(
    db,
    job.podId,
    "service_running",
    `${job.type} ${reported.version} is running on 127.0.0.1:${reported.port}`,
    { service_type: job.type, version: reported.version },
  );
}

/** `installing` → `error` with the reason, and an `error` event naming the service (as failed pod operations are). */
export async function recordInstallFailed(db: Db, serviceId: string, reason: string): Promise<void> {
  const updated = await db
    .update(podServices)
    .set({ status: "error", errorMsg: reason, updatedAt: nowIso() })
    .where(and(eq(podServices.id, serviceId), eq(podServices.status, "installing")))
    .returning({ podId: podServices.podId, type: podServices.serviceType });
  const [row] = updated;
  if (!row) return;
  await recordEventStatement(db, row.podId, "error", `${row.type} install failed: ${reason}`, {
    service_type: row.type,
  });
}
