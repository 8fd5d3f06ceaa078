import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { deployments, podServices } from "../../db/schema";
import type { Bindings } from "../../env";
import { raiseAlert, resolveAlert } from "./raise";

/**
 * Where the events that alert come from (docs/alerts.md). Each is called once the outcome is in D1
 * and never throws (raise.ts), so the work it reports on is never failed by its alert.
 */

/** A deployment's end: failed opens the pod's `deploy_failed` incident, a success closes it. */
export async function alertOnDeployment(env: Bindings, db: Db, deploymentId: string): Promise<void> {
  const [row] = await db
    .select({
      podId: deployments.podId,
      status: deployments.status,
      failureClass: deployments.failureClass,
      failureMessage: deployments.failureMessage,
    })
    .from(deployments)
    .where(eq(deployments.id, deploymentId));
  if (!row) return;
  if (row.status === "failed") {
    await raiseAlert(env, db, {
      event: "deploy_failed",
      podId: row.podId,
      summary: (pod) =>
        `The deploy of ${pod} failed (${row.failureClass ?? "unknown"}): ${row.failureMessage ?? "no reason given"}`,
    });
  } else if (row.status === "success") {
    await resolveAlert(env, db, {
      event: "deploy_failed",
      podId: row.podId,
      summary: (pod) => `${pod} deployed successfully again.`,
    });
  }
}

/** A backup that failed (or whose test-restore did, or was found corrupted) opens `backup_failed`. */
export async function alertOnBackupFailed(env: Bindings, db: Db, podId: string, reason: string) {
  await raiseAlert(env, db, {
    event: "backup_failed",
    podId,
    summary: (pod) => `A backup of ${pod} failed: ${reason}`,
  });
}

/** A backup completed and verified closes the pod's `backup_failed` incident. */
export async function alertOnBackupCompleted(env: Bindings, db: Db, podId: string) {
  await resolveAlert(env, db, {
    event: "backup_failed",
    podId,
    summary: (pod) => `A backup of ${pod} completed and passed its test-restore again.`,
  });
}

/**
 * A database service that became `error` (its install failed, or its sidecar stopped running after
 * it: worker/services/services/sidecars.ts) opens the pod's `service_failed`; one running closes it.
 */
export async function alertOnService(env: Bindings, db: Db, serviceId: string): Promise<void> {
  const [row] = await db
    .select({
      podId: podServices.podId,
      type: podServices.serviceType,
      status: podServices.status,
      errorMsg: podServices.errorMsg,
    })
    .from(podServices)
    .where(eq(podServices.id, serviceId));
  if (!row) return;
  if (row.status === "error") {
    await raiseAlert(env, db, {
      event: "service_failed",
      podId: row.podId,
      summary: (pod) => `The ${row.type} service of ${pod} failed: ${row.errorMsg ?? "no reason given"}`,
    });
  } else if (row.status === "running") {
    await resolveAlert(env, db, {
      event: "service_failed",
      podId: row.podId,
      summary: (pod) => `The ${row.type} service of ${pod} runs again.`,
    });
  }
}
