import { and, eq } from "drizzle-orm";
import type { CodingAgentSlug } from "../../../shared/coding-agents";
import { findCodingAgent } from "../../../shared/coding-agents";
import type { Db } from "../../db/client";
import { podCodingAgents, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "../pods/events";

/** What the pod-coding-agent workflow asks the host. */
export interface InstallJob {
  rowId: string;
  podId: string;
  podName: string;
  hostId: string;
  slug: CodingAgentSlug;
  version: string;
}

/** The install to run, or why there is none (the row is gone or settled, or the pod lost its host). */
export async function loadInstallJob(
  db: Db,
  rowId: string,
): Promise<{ kind: "run"; job: InstallJob } | { kind: "skip"; reason: string; fail?: boolean }> {
  const [row] = await db
    .select({ agent: podCodingAgents, pod: pods })
    .from(podCodingAgents)
    .innerJoin(pods, eq(pods.id, podCodingAgents.podId))
    .where(eq(podCodingAgents.id, rowId))
    .limit(1);
  if (!row) return { kind: "skip", reason: "the agent was removed" };
  const { agent, pod } = row;
  if (agent.status !== "installing") return { kind: "skip", reason: `the agent is ${agent.status}` };
  const catalog = findCodingAgent(agent.slug);
  if (!pod.hostId || !catalog)
    return {
      kind: "skip",
      reason: `pod ${pod.name} has no host, or ${agent.slug} left the catalog`,
      fail: true,
    };
  return {
    kind: "run",
    job: {
      rowId,
      podId: pod.id,
      podName: pod.name,
      hostId: pod.hostId,
      slug: catalog.slug as CodingAgentSlug,
      version: agent.requestedVersion,
    },
  };
}

/** `installing` → `installed` with what the host reported, and the `agent_installed` event. */
export async function recordInstalled(
  db: Db,
  job: InstallJob,
  reported: { version: string; command: string; nodeMajor: number; pinned: boolean },
): Promise<void> {
  const now = nowIso();
  const updated = await db
    .update(podCodingAgents)
    .set({
      status: "installed",
      version: reported.version,
      nodeMajor: reported.nodeMajor,
      nodePinned: reported.pinned,
      errorMsg: null,
      installedAt: now,
      updatedAt: now,
    })
    .where(and(eq(podCodingAgents.id, job.rowId), eq(podCodingAgents.status, "installing")))
    .returning({ id: podCodingAgents.id });
  if (updated.length === 0) return;
  await recordEventStatement(
    db,
    job.podId,
    "agent_installed",
    `${job.slug} ${reported.version} installed on pod ${job.podName}: run ${reported.command} (Node ${reported.nodeMajor})`,
    {
      agent: job.slug,
      version: reported.version,
      node_major: reported.nodeMajor,
      node_pinned: reported.pinned,
    },
  );
}

/** `installing` → `error` with the reason, and the `agent_install_failed` event. */
export async function recordInstallFailed(db: Db, rowId: string, reason: string): Promise<void> {
  const updated = await db
    .update(podCodingAgents)
    .set({ status: "error", errorMsg: reason, updatedAt: nowIso() })
    .where(and(eq(podCodingAgents.id, rowId), eq(podCodingAgents.status, "installing")))
    .returning({ podId: podCodingAgents.podId, slug: podCodingAgents.slug });
  const [row] = updated;
  if (!row) return;
  await recordEventStatement(db, row.podId, "agent_install_failed", `${row.slug} install failed: ${reason}`, {
    agent: row.slug,
  });
}
