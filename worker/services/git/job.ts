import { and, desc, eq, ne } from "drizzle-orm";
import { PRESET_SLUGS, type PresetSlug } from "../../../shared/catalog";
import type { DeployOutcome } from "../../../shared/protocol/git";
import type { Db } from "../../db/client";
import { deployments, gitConfigs, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { finishDeployment } from "./queue";
import { openToken } from "./secrets";

/**
 * What the pod-deploy workflow reads and writes around the host's work. `DeployJob` is a step's
 * output, so it holds the token only encrypted; the workflow decrypts it outside any step, for the
 * one command, and nothing records it.
 */
export type DeployJob =
  | { kind: "skip"; reason: string }
  | {
      kind: "deploy" | "rollback";
      podId: string;
      podName: string;
      hostId: string;
      preset: PresetSlug;
      repoUrl: string | null;
      branch: string | null;
      tokenEncrypted: string | null;
      buildCommand: string | null;
      /** known before the host fetches (a push) or the rollback's target */
      commitSha: string | null;
      /** rollback: the release to switch to, and the deployment serving before (it becomes rolled_back) */
      release: string | null;
      rolledBackFrom: string | null;
    };

export async function loadDeployJob(db: Db, deploymentId: string): Promise<DeployJob> {
  const [row] = await db
    .select({ d: deployments, pod: pods, config: gitConfigs })
    .from(deployments)
    .innerJoin(pods, eq(pods.id, deployments.podId))
    .leftJoin(gitConfigs, eq(gitConfigs.podId, deployments.podId))
    .where(eq(deployments.id, deploymentId));
  if (!row) return { kind: "skip", reason: "the deployment is gone" };
  const { d, pod, config } = row;
  const preset = PRESET_SLUGS.find((p) => p === pod.preset);
  const failure = async (message: string) => {
    await finishDeployment(db, deploymentId, { ok: false, class: "unknown", message });
    return { kind: "skip", reason: message } as const;
  };
  if (!preset) return failure(`the pod has an unknown preset ${pod.preset}`);
  if (pod.status !== "running" || !pod.hostId) return failure("the pod is not running");
  const common = {
    podId: pod.id,
    podName: pod.name,
    hostId: pod.hostId,
    preset,
    repoUrl: config?.repoUrl ?? null,
    branch: config?.branch ?? null,
    tokenEncrypted: config?.tokenEncrypted ?? null,
    buildCommand: config?.buildCommand ?? null,
    commitSha: d.commitSha,
  };
  if (d.trigger === "rollback") {
    if (!d.release) return failure("the rollback names no release");
    const serving = await servingDeployment(db, pod.id, d.id);
    return { kind: "rollback", ...common, release: d.release, rolledBackFrom: serving?.id ?? null };
  }
  if (!config) return failure("no repository is connected to the pod any more");
  return { kind: "deploy", ...common, release: null, rolledBackFrom: null };
}

/** The token for the host's one command, or undefined (none stored). */
export async function tokenOf(env: Bindings, job: { podId: string; tokenEncrypted: string | null }) {
  if (!job.tokenEncrypted) return undefined;
  const token = await openToken(env, job.podId, job.tokenEncrypted);
  return token.ok ? token.value : undefined;
}

/** The successful deployment whose release serves now (the newest success), but `except`. */
export async function servingDeployment(db: Db, podId: string, except?: string) {
  const [row] = await db
    .select()
    .from(deployments)
    .where(
      and(
        eq(deployments.podId, podId),
        eq(deployments.status, "success"),
        except ? ne(deployments.id, except) : undefined,
      ),
    )
    .orderBy(desc(deployments.finishedAt))
    .limit(1);
  return row;
}

/** The host's outcome recorded: the deployment's end, its event, and the releases the host keeps. */
export async function recordDeployOutcome(
  db: Db,
  deploymentId: string,
  job: Extract<DeployJob, { kind: "deploy" | "rollback" }>,
  outcome: DeployOutcome,
): Promise<void> {
  if (outcome.ok) {
    await finishDeployment(
      db,
      deploymentId,
      {
        ok: true,
        commitSha: outcome.commit.sha,
        commitMessage: outcome.commit.message,
        release: outcome.release,
      },
      job.rolledBackFrom ? { rolledBackFrom: job.rolledBackFrom } : {},
    );
    await db
      .update(gitConfigs)
      .set({ keptReleases: JSON.stringify(outcome.kept), updatedAt: nowIso() })
      .where(eq(gitConfigs.podId, job.podId));
    return;
  }
  await finishDeployment(db, deploymentId, {
    ok: false,
    class: outcome.class,
    message: outcome.message,
    commitSha: outcome.commit?.sha ?? null,
    commitMessage: outcome.commit?.message ?? null,
  });
}
