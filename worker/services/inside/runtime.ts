import type { NODE_VERSIONS } from "../../../shared/catalog";
import { findPlan, findPreset, RUNTIMES } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { START_FILES } from "../../../shared/start-files";
import type { TeamCall } from "../context";
import { callTarget, podTarget } from "../pods/target";

/** Preset details, disk usage and the Node.js version: read from the pod, framed by the catalog. */

const PROBE_TIMEOUT_MS = 20_000;
const DISK_TIMEOUT_MS = 70_000;
const NODE_TIMEOUT_MS = 40_000;
const GB = 1024 ** 3;

export interface PresetView {
  preset: string;
  port: number;
  app_root: string;
  public_root: string;
  runtime: { name: string; version: string };
  start_command: string;
}

/** What each preset serves with when nothing in the pod says otherwise. */
const DEFAULT_START: Record<string, string> = {
  static: "nginx",
  php: "nginx + php-fpm",
  nodejs: "npm start",
  python: `python ${START_FILES.python[0]}`,
};

/**
 * The catalog's port and roots, with the runtime version and start command the pod reports. A pod
 * that cannot be asked (stopped host, slow probe) still answers, from the catalog's defaults.
 */
export async function podPreset({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<PresetView>> {
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const slug = target.value.found.pod.preset;
  const preset = findPreset(slug);
  const runtime = RUNTIMES.find((r) => r.preset === slug);
  if (!preset || !runtime) return fail("internal", `pod ${name} has an unknown preset ${slug}`);
  const probed = await callTarget(
    ctx,
    target.value,
    "pod.preset",
    { name, preset: preset.slug },
    { timeoutMs: PROBE_TIMEOUT_MS },
  );
  const live = probed.ok ? probed.value : { runtimeVersion: null, startCommand: null };
  return ok({
    preset: preset.slug,
    port: preset.port,
    app_root: preset.appRoot,
    public_root: preset.publicRoot,
    runtime: { name: runtime.name, version: live.runtimeVersion ?? runtime.default },
    start_command: live.startCommand ?? DEFAULT_START[slug] ?? "",
  });
}

export interface DiskUsageView {
  used_bytes: number;
  limit_bytes: number;
  percent: number;
  paths: { path: string; bytes: number }[];
}

export async function podDiskUsage({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<DiskUsageView>> {
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const plan = findPlan(target.value.found.pod.planSlug);
  if (!plan) return fail("internal", `pod ${name} has an unknown plan`);
  const r = await callTarget(ctx, target.value, "pod.disk", { name }, { timeoutMs: DISK_TIMEOUT_MS });
  if (!r.ok) return r;
  // The host's own figure is the limit writes fail against; a home made before limits has none.
  const limit = r.value.limitBytes ?? plan.diskGb * GB;
  return ok({
    used_bytes: r.value.usedBytes,
    limit_bytes: limit,
    percent: Math.round((r.value.usedBytes / limit) * 10_000) / 100,
    paths: r.value.paths,
  });
}

/** 400 unless the pod is Node.js and on another major; then ~/.pod/node-version and an app restart. */
export async function setNodeVersion({
  ctx,
  teamId,
  input: { name, version },
}: TeamCall<{ name: string; version: (typeof NODE_VERSIONS)[number] }>): Promise<
  Result<{ node_version: (typeof NODE_VERSIONS)[number] }>
> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const { pod } = target.value.found;
  if (pod.preset !== "nodejs")
    return fail("bad_request", `pod ${name} is not a Node.js pod (preset ${pod.preset})`);
  const r = await callTarget(
    ctx,
    target.value,
    "pod.node-version",
    { name, version },
    { timeoutMs: NODE_TIMEOUT_MS },
  );
  if (!r.ok) return r;
  if (!r.value.changed) return fail("bad_request", `version: pod ${name} is already on Node.js ${version}`);
  return ok({ node_version: version });
}
