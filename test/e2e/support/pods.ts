import { expect } from "vitest";
import type { ApiClient } from "./api";
import { waitFor } from "./stack";

/** Until the test host's agent is connected (its region shows as available). */
// 90 s: an agent whose first dials met a Worker still starting waits out its jittered backoff (up
// to 16 s by the fifth try, 30 s at most), and CI's loaded start can take that
export const waitForHostOnline = (api: ApiClient, region = "eu-central") =>
  waitFor(
    "the host to come online",
    async () => {
      const res = await api.get("/api/regions");
      return res.body.regions?.find((r: { slug: string; available: boolean }) => r.slug === region)?.available
        ? true
        : undefined;
    },
    90_000,
  );

/** Until the pod reports `status` through the API (the host is asked live). */
export const waitForPodStatus = (api: ApiClient, name: string, status: string, timeoutMs = 60_000) =>
  waitFor(
    `${name} to be ${status}`,
    async () => {
      const res = await api.get(`/api/pods/${name}`);
      return res.status === 200 && res.body.status === status ? res.body : undefined;
    },
    timeoutMs,
  );

/** Creates the pods (202 each), then waits until every one of them is running. Answers their ssh ports. */
export async function createRunningPods(api: ApiClient, pods: [name: string, preset: string][]) {
  const ports: Record<string, number> = {};
  for (const [name, preset] of pods) {
    const res = await api.post("/api/pods", { name, preset });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    ports[name] = res.body.ssh_port;
  }
  for (const [name] of pods) await waitForPodStatus(api, name, "running");
  return ports;
}

/** Every one of `hosts` says through its own `/agent/ping` that it takes pods (two-host stacks). */
export const waitForHostsPlaceable = (
  api: string,
  hosts: { agentEnv: Record<string, string> }[],
  timeoutMs?: number,
) =>
  waitFor(
    "every host to take pods",
    async () => {
      const pings = await Promise.all(
        hosts.map(async (h) => {
          const res = await fetch(`${api}/agent/ping`, {
            headers: { authorization: `Bearer ${h.agentEnv.PODHOST_AGENT_TOKEN}` },
          });
          return ((await res.json()) as { placeable?: boolean }).placeable;
        }),
      );
      return pings.every(Boolean) ? true : undefined;
    },
    timeoutMs,
  );
