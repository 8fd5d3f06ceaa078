import { Hono } from "hono";
import { ApiError } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";
import { hostOwnsStagingKey } from "../services/blobs/staging";

/**
 * Staged blobs as the host agent sees them (see services/blobs/staging.ts), authenticated with the
 * host's agent token; a host reaches only keys under its own id, anything else is 404.
 * `GET /agent/blobs/{key}`: the bytes a caller sent, streamed from R2. (Bytes going the other way
 * stream through a relay, worker/routes/agent-relay.ts.)
 */
export const agentBlobsRouter = new Hono<HostEnv>().use("*", requireHostToken).get("/:key{.+}", async (c) => {
  const key = ownedKey(c.get("host").id, c.req.param("key"));
  const object = await c.env.BLOBS.get(key);
  if (!object) throw new ApiError("not_found", "no such staged blob");
  return new Response(object.body, {
    headers: { "content-length": String(object.size), "content-type": "application/octet-stream" },
  });
});

function ownedKey(hostId: string, key: string): string {
  if (!hostOwnsStagingKey(hostId, key)) throw new ApiError("not_found", "no such staged blob");
  return key;
}
