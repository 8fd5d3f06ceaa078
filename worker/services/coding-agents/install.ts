import { eq } from "drizzle-orm";
import type { CodingAgentSlug } from "../../../shared/coding-agents";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { type PodCodingAgentRow, podCodingAgents } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { hostOf, NOT_RUNNING } from "../pods/target";
import { codingAgentRowOf } from "./lookup";
import { recordInstallFailed } from "./outcome";

/**
 * `POST /api/pods/{name}/agents`: a row `installing`, its `agent_install` event, and the
 * pod-coding-agent workflow that asks the host (worker/workflows/pod-coding-agent.ts); 202.
 *
 * Refused: 400 when the pod is not running (an unknown agent or version never gets here: the
 * route's schema knows the catalog), 409 when the agent is installed or still installing. A failed
 * install (`error`) may be tried again: its row gives way to the new one.
 */
export async function installCodingAgent({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; agent: CodingAgentSlug; version?: string }>): Promise<
  Result<{ slug: string; status: "installing" }>
> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const host = hostOf(found.value);
  if (!host.ok) return host;
  const slug = input.agent;
  const earlier = await codingAgentRowOf(ctx.db, pod.id, slug);
  if (earlier && earlier.status !== "error")
    return fail("conflict", `${slug} is already ${earlier.status} on pod ${pod.name}`);
  const now = nowIso();
  const version = input.version ?? "latest";
  const row: PodCodingAgentRow = {
    id: newId("cag"),
    podId: pod.id,
    slug,
    status: "installing",
    requestedVersion: version,
    version: null,
    nodeMajor: null,
    nodePinned: null,
    errorMsg: null,
    installedAt: now,
    createdAt: earlier?.createdAt ?? now,
    updatedAt: now,
  };
  const insert = ctx.db.insert(podCodingAgents).values(row);
  const event = recordEventStatement(
    ctx.db,
    pod.id,
    "agent_install",
    `installing ${slug} (${version}) on pod ${pod.name}`,
    {
      agent: slug,
      version,
    },
  );
  try {
    await (earlier
      ? // the failed attempt's row gives way to the retry's (the unique index allows one per agent)
        ctx.db.batch([
          ctx.db.delete(podCodingAgents).where(eq(podCodingAgents.id, earlier.id)),
          insert,
          event,
        ])
      : ctx.db.batch([insert, event]));
  } catch (error) {
    // Two installs at once: the unique (pod, slug) index lets one in.
    if (/UNIQUE constraint failed/i.test(String(error)))
      return fail("conflict", `${slug} is already installing on pod ${pod.name}`);
    throw error;
  }
  try {
    await ctx.env.POD_CODING_AGENT.create({ id: row.id, params: { rowId: row.id } });
  } catch (error) {
    // An install whose workflow never started must not stay `installing`.
    await recordInstallFailed(ctx.db, row.id, `the install could not be started: ${String(error)}`);
    throw error;
  }
  return ok({ slug, status: "installing" as const });
}
