import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * App health: what the agent's periodic check finds wrong with a running pod's app (a Diagnosis,
 * shipped with `agent:health` and stored as the pod's `app_health_diagnosis` JSON string), and the
 * op that applies a diagnosis's one-click fix. Spread into `ops` in ./ops.ts like ./inside.ts.
 */

const Preset = lazy(() => z.enum(["static", "php", "nodejs", "python"]));

/** The failures the agent tells apart, most specific first (see agent/health/classify.ts). */
export const DIAGNOSIS_CLASSES = [
  "out_of_memory",
  "missing_module",
  "missing_start_script",
  "port_mismatch",
  "crash_loop",
  "not_responding",
] as const;
export type DiagnosisClass = (typeof DIAGNOSIS_CLASSES)[number];

/**
 * One-click fixes:
 * - `install_dependencies`: the reload's install (npm install / pip install -r) and an app restart;
 * - `add_start_script`: `scripts.start = "node <entry>"` in package.json, then an app restart;
 * - `forward_port`: a small supervised forwarder (worker `podhost-port-forward`) from the preset's
 *   port on the pod's address to the port the app really listens on. The platform's PORT always
 *   wins over `.env` (images/README.md), so an app deaf to PORT cannot be fixed through `.env`.
 */
export const FIX_ACTIONS = ["install_dependencies", "add_start_script", "forward_port"] as const;
export type FixAction = (typeof FIX_ACTIONS)[number];

/** The public shape of `app_health_diagnosis` (snake_case: it is shown as is through the API). */
export const Diagnosis = lazy(() =>
  z.object({
    // A string on the wire, so a newer agent's new class does not drop a whole report.
    class: z.string().min(1).max(64),
    title: z.string().max(300),
    detail: z.string().max(4000),
    fix: z.string().max(1000),
    auto_fixable: z.boolean(),
    /** 0–1: how sure the classifier is of the cause */
    confidence: z.number().min(0).max(1),
    fix_action: z.enum(FIX_ACTIONS).optional(),
  }),
);
export type Diagnosis = Built<typeof Diagnosis>;

export const healthOps = {
  /**
   * Apply a fix to a running pod. The agent looks again at what it needs (the entry file, the port
   * the app listens on) rather than trusting the stored diagnosis; nothing left to fix is `conflict`.
   * A failing dependency install is a result (`ok: false` with the tail of its output), as for reload.
   */
  "pod.health.fix": () => ({
    params: z.object({ name: PodName, preset: Preset(), action: z.enum(FIX_ACTIONS) }),
    result: z.discriminatedUnion("ok", [
      z.object({ ok: z.literal(true), action: z.enum(FIX_ACTIONS), detail: z.string() }),
      z.object({ ok: z.literal(false), depsOutput: z.string(), exitCode: z.number().int().nullable() }),
    ]),
  }),
};
