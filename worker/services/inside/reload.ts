import { fail, ok, type Result } from "../../../shared/errors";
import type { OpResult } from "../../../shared/protocol";
import { RELOAD_STEP_TIMEOUT_S } from "../../../shared/protocol/inside";
import type { Db } from "../../db/client";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { powerPod } from "../pods/power";
import { callTarget, NOT_RUNNING, podTarget } from "../pods/target";

export interface ReloadView {
  status: "reloaded";
  services: string[];
  preset: string;
  deps_installed?: "npm" | "pip";
}

/** up to three steps (install, build or venv, then pip) on the host, the restarts, and the trip */
export const RELOAD_TIMEOUT_MS = (RELOAD_STEP_TIMEOUT_S * 3 + 150) * 1000;
const PRESETS = ["static", "php", "nodejs", "python"] as const;

type ReloadDone = Extract<OpResult<"pod.reload">, { ok: true }>;

/** The `reloaded` event of a reload that went through (the route's and from-zip's alike). */
export async function recordReloaded(db: Db, podId: string, r: ReloadDone) {
  const deps = r.depsInstalled ?? undefined;
  await recordEventStatement(
    db,
    podId,
    "reloaded",
    deps ? `pod reloaded (dependencies installed with ${deps})` : "pod reloaded",
    {
      services: r.services,
      ...(deps ? { deps_installed: deps } : {}),
      ...(r.unsupported.length ? { unsupported_manifests: r.unsupported } : {}),
    },
  );
}

/**
 * Reinstall dependencies and restart the pod's services. A stopped pod is started first (contract);
 * a failed install or build is 500 with `deps_output`, the tail of the failing command's output.
 */
export async function reloadPodApp({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<ReloadView>> {
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const { pod } = target.value.found;
  if (pod.status === "stopped") {
    const started = await powerPod({ ctx, teamId, input: { name, action: "start" } });
    if (!started.ok) return started;
  } else if (pod.status !== "running") {
    return fail("bad_request", NOT_RUNNING);
  }
  const preset = PRESETS.find((p) => p === pod.preset);
  if (!preset) return fail("internal", `pod ${name} has an unknown preset ${pod.preset}`);
  const r = await callTarget(
    ctx,
    target.value,
    "pod.reload",
    { name, preset },
    { timeoutMs: RELOAD_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.ok) {
    return fail(
      "internal",
      `dependency install or build failed (exit status ${r.value.exitCode ?? "unknown"}); see deps_output and the build log`,
      { deps_output: r.value.depsOutput },
    );
  }
  await recordReloaded(ctx.db, pod.id, r.value);
  const deps = r.value.depsInstalled ?? undefined;
  // The spec's `deps_installed` names npm or pip; a composer install shows in the event and the log.
  const reported = deps === "npm" || deps === "pip" ? deps : undefined;
  return ok({
    status: "reloaded",
    services: r.value.services,
    preset: pod.preset,
    ...(reported ? { deps_installed: reported } : {}),
  });
}
