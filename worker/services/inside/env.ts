import { fail, ok, type Result } from "../../../shared/errors";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { callPodHost, callTarget, podTarget } from "../pods/target";

/**
 * The app's `.env` inside the pod. The file is the truth (the pod's user edits it over SSH too), so
 * every call goes to the host; nothing is stored here. Events name the keys, never the values.
 */

const ENV_TIMEOUT_MS = 30_000;
/** presets whose app service reads .env at start; static and php have none to restart */
const APP_PRESETS = new Set(["nodejs", "python"]);

export interface EnvView {
  path: string;
  vars: Record<string, string>;
}

export async function getPodEnv({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<EnvView>> {
  const r = await callPodHost(
    ctx,
    teamId,
    name,
    "pod.env.get",
    { name },
    {
      timeoutMs: ENV_TIMEOUT_MS,
      running: false,
    },
  );
  return r.ok ? ok({ path: r.value.path, vars: r.value.vars }) : r;
}

/** Merge into the file (contract), then restart the app service where there is one. */
export async function setPodEnv({
  ctx,
  teamId,
  input: { name, vars },
}: TeamCall<{ name: string; vars: Record<string, string> }>): Promise<
  Result<EnvView & { restarted: string[] }>
> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const { pod } = target.value.found;
  const r = await callTarget(
    ctx,
    target.value,
    "pod.env.set",
    { name, vars, restartApp: APP_PRESETS.has(pod.preset) },
    { timeoutMs: ENV_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  const keys = Object.keys(vars);
  await recordEventStatement(ctx.db, pod.id, "env_updated", `environment variables set: ${keys.join(", ")}`, {
    action: "set",
    keys,
    ...(r.value.restarted.length ? { restarted: r.value.restarted } : {}),
  });
  return ok({ path: r.value.path, vars: r.value.vars, restarted: r.value.restarted });
}

/**
 * Drop keys from the file; the app service restarts (nodejs, python) when something was removed,
 * so the running process loses the variables too, as it gains them on a PUT.
 */
export async function unsetPodEnv({
  ctx,
  teamId,
  input: { name, keys },
}: TeamCall<{ name: string; keys: string[] }>): Promise<Result<EnvView>> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const { pod } = target.value.found;
  const r = await callTarget(
    ctx,
    target.value,
    "pod.env.unset",
    { name, keys, restartApp: APP_PRESETS.has(pod.preset) },
    { timeoutMs: ENV_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.exists) return fail("not_found", `pod ${name} has no env file (${r.value.path})`);
  await recordEventStatement(
    ctx.db,
    pod.id,
    "env_updated",
    `environment variables removed: ${keys.join(", ")}`,
    {
      action: "unset",
      keys,
      ...(r.value.restarted.length ? { restarted: r.value.restarted } : {}),
    },
  );
  return ok({ path: r.value.path, vars: r.value.vars });
}
