import { findPlan, findPreset, formatDisk, formatMemory, POD_USER } from "../../../shared/catalog";
import type { PodRow, PodStatus } from "../../db/schema";

export interface PodView {
  id: string;
  name: string;
  preset: string;
  status: PodStatus;
  ip: string;
  domain: string;
  ssh_port: number | null;
  ssh_user: string;
  cpu: number;
  memory: string;
  disk: string;
  plan_slug: string;
  app_root: string;
  region: string;
  server_name: string;
  description: string;
  created_at: string;
  updated_at: string;
  app_health_diagnosis?: string;
}

export function toPodView(pod: PodRow, serverName: string | null, podDomain: string): PodView {
  const plan = findPlan(pod.planSlug);
  return {
    id: pod.id,
    name: pod.name,
    preset: pod.preset,
    status: pod.status,
    ip: pod.ip ?? "",
    domain: `${pod.name}.${podDomain}`,
    ssh_port: pod.sshPort,
    ssh_user: POD_USER,
    cpu: plan?.cpu ?? 0,
    memory: plan ? formatMemory(plan.memoryMb) : "",
    disk: plan ? formatDisk(plan.diskGb) : "",
    plan_slug: pod.planSlug,
    app_root: findPreset(pod.preset)?.appRoot ?? "",
    region: pod.region,
    server_name: serverName ?? "",
    description: pod.description,
    created_at: pod.createdAt,
    updated_at: pod.updatedAt,
    ...(pod.appHealthDiagnosis ? { app_health_diagnosis: pod.appHealthDiagnosis } : {}),
  };
}
