import { env } from "cloudflare:workers";
import type { PodState } from "../../../shared/protocol";
import { FakeAgent, insertHost, insertPod } from "./agent";
import { registerUser } from "./client";

/** Running pods on a connected fake host, for the tests of what the agent reports (metrics, health). */

export const running = (name: string, ip = "172.30.0.2"): PodState => ({ name, state: "running", ip });

/** A new user and a running pod of theirs on `hostId`. */
export async function userWithPod(hostId: string, preset = "static") {
  const user = await registerUser();
  const pod = await insertPod({ hostId, teamId: user.user.active_team_id, status: "running" });
  if (preset !== "static")
    await env.DB.prepare("UPDATE pods SET preset = ? WHERE id = ?").bind(preset, pod.id).run();
  return { pod, as: { token: user.token } };
}

/** A new host with its agent connected, and a user's running pod on it. */
export async function onlineWithPod(preset = "static") {
  const host = await insertHost();
  const owned = await userWithPod(host.id, preset);
  const { agent } = await FakeAgent.online(host, [running(owned.pod.name)]);
  return { host, agent, ...owned };
}
