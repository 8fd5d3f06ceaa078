import { findPreset, type Plan, type PresetSlug } from "../../../shared/catalog";
import type { PodLimits, PodSpec } from "../../../shared/protocol";

export interface Customizations {
  env_vars?: Record<string, string>;
  cron_jobs?: { schedule: string; command: string }[];
  workers?: { name: string; command: string }[];
}

export const limitsOf = (plan: Plan): PodLimits => ({
  cpu: plan.cpu,
  memoryMb: plan.memoryMb,
  diskGb: plan.diskGb,
  // Enough for a web server, an app and its workers; stops fork bombs long before the host notices.
  pids: 256 * plan.cpu + 256,
  logDays: plan.logHistoryDays,
  logMb: plan.logHistoryMb,
});

/** What the agent needs to make the pod's containers. */
export function podSpec(input: {
  podId: string;
  name: string;
  sshPort: number;
  preset: PresetSlug;
  plan: Plan;
  podDomain: string;
  customizations?: Customizations;
  authorizedKeys?: string[];
}): PodSpec {
  const preset = findPreset(input.preset);
  return {
    podId: input.podId,
    name: input.name,
    preset: input.preset,
    port: preset?.port ?? 8080,
    domain: `${input.name}.${input.podDomain}`,
    sshPort: input.sshPort,
    limits: limitsOf(input.plan),
    env: input.customizations?.env_vars ?? {},
    cronJobs: input.customizations?.cron_jobs ?? [],
    workers: input.customizations?.workers ?? [],
    authorizedKeys: input.authorizedKeys ?? [],
  };
}
