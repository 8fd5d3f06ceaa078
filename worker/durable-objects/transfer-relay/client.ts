import type { Bindings } from "../../env";

/**
 * Transfers streamed through a TransferRelay Durable Object (see ./object.ts),
 * one object per transfer, named `{hostId}/{uuid}`: only that host's agent can reach it through
 * the agent-facing routes (../../routes/agent-relay.ts). Only the name crosses the control WebSocket.
 */

/** the largest file a relay carries (the download limit) */
export const MAX_RELAY_BYTES = 512 * 1024 * 1024;

/** A fresh relay id owned by `hostId`. */
export const newRelayId = (hostId: string): string => `${hostId}/${crypto.randomUUID()}`;

/** Whether `id` is a relay id of `hostId` (the agent-facing routes check every id). */
export function hostOwnsRelay(hostId: string, id: string): boolean {
  const rest = id.startsWith(`${hostId}/`) ? id.slice(hostId.length + 1) : "";
  return /^[0-9a-f-]{36}$/.test(rest);
}

/** The relay object of `id` (created on first use). */
export const relayStub = (env: Bindings, id: string) =>
  env.TRANSFER_RELAY.get(env.TRANSFER_RELAY.idFromName(id));

/** Best effort: whoever still waits on the relay fails with `reason` (a missing object is no loss). */
export async function cancelRelay(env: Bindings, id: string, reason: string): Promise<void> {
  try {
    await relayStub(env, id).cancel(reason);
  } catch (error) {
    console.warn(JSON.stringify({ id, msg: "could not cancel relay", error: String(error) }));
  }
}
