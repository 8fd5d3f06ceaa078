import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { FixAction } from "../../../shared/protocol/health";
import { RELOAD_STEP_TIMEOUT_S } from "../../../shared/protocol/inside";
import { pods } from "../../db/schema";
import { resolveUnhealthy } from "../alerts/host-reports";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "../pods/events";
import { callTarget, NOT_RUNNING, podTarget } from "../pods/target";
import { parseDiagnosis } from "./report";

export interface FixView {
  status: "fixed";
  action: FixAction;
}

/** an install can take as long as a reload; the other fixes take seconds */
const FIX_TIMEOUT_MS = (RELOAD_STEP_TIMEOUT_S * 3 + 150) * 1000;
const PRESETS = ["static", "php", "nodejs", "python"] as const;

/**
 * Apply the one-click fix of the pod's current diagnosis on its host. 400 when there is no
 * diagnosis with a fix (contract), or the pod is not running. Once applied, the diagnosis is
 * cleared and a `health_fixed` event recorded; the host's next health check says again whether
 * something is wrong. A failing dependency install is 500 with `deps_output`, as for reload.
 */
export async function fixDiagnosis(
  ctx: ServiceContext,
  teamId: string,
  name: string,
): Promise<Result<FixView>> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const { pod } = target.value.found;
  const diagnosis = parseDiagnosis(pod.appHealthDiagnosis);
  if (!diagnosis?.auto_fixable || !diagnosis.fix_action) {
    return fail(
      "bad_request",
      diagnosis
        ? `the pod's diagnosis (${diagnosis.class}) has no automatic fix: ${diagnosis.fix}`
        : "the pod has no diagnosis to fix",
    );
  }
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const preset = PRESETS.find((p) => p === pod.preset);
  if (!preset) return fail("internal", `pod ${name} has an unknown preset ${pod.preset}`);
  const action = diagnosis.fix_action;
  const r = await callTarget(
    ctx,
    target.value,
    "pod.health.fix",
    { name, preset, action },
    { timeoutMs: FIX_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.ok) {
    return fail(
      "internal",
      `dependency install failed (exit status ${r.value.exitCode ?? "unknown"}); see deps_output and the build log`,
      { deps_output: r.value.depsOutput },
    );
  }
  await ctx.db.batch([
    ctx.db.update(pods).set({ appHealthDiagnosis: null }).where(eq(pods.id, pod.id)),
    recordEventStatement(ctx.db, pod.id, "health_fixed", `diagnosis fix applied: ${r.value.detail}`, {
      class: diagnosis.class,
      action,
    }),
  ]);
  // The diagnosis is gone: an app_unhealthy incident open for it closes (a report of it again opens a new one).
  await resolveUnhealthy(ctx.env, ctx.db, [pod.id]);
  return ok({ status: "fixed", action });
}
