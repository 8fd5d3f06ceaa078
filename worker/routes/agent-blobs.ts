import { Hono } from "hono";
import { ApiError } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";
import { hostOwnsStagingKey, MAX_STAGED_BLOB_BYTES } from "../services/blobs/staging";

/**
 * Staged blobs as the host agent sees them (see services/blobs/staging.ts), authenticated with the
 * host's agent token; a host reaches only keys under its own id, anything else is 404.
 * - `GET /agent/blobs/{key}`: the bytes a caller sent, streamed from R2.
 * - `PUT /agent/blobs/{key}`: bytes the agent read on the host (Content-Length required), streamed
 *   into R2 for the Worker to hand to the caller.
 */
export const agentBlobsRouter = new Hono<HostEnv>()
  .use("*", requireHostToken)
  .get("/:key{.+}", async (c) => {
    const key = ownedKey(c.get("host").id, c.req.param("key"));
    const object = await c.env.BLOBS.get(key);
    if (!object) throw new ApiError("not_found", "no such staged blob");
    return new Response(object.body, {
      headers: { "content-length": String(object.size), "content-type": "application/octet-stream" },
    });
  })
  .put("/:key{.+}", async (c) => {
    const key = ownedKey(c.get("host").id, c.req.param("key"));
    const length = Number(c.req.header("content-length") ?? Number.NaN);
    if (!Number.isSafeInteger(length) || length < 0)
      throw new ApiError("bad_request", "Content-Length required");
    if (length > MAX_STAGED_BLOB_BYTES)
      throw new ApiError("payload_too_large", `a staged blob is at most ${MAX_STAGED_BLOB_BYTES} bytes`);
    const body = c.req.raw.body ?? new Uint8Array();
    const object = await c.env.BLOBS.put(key, body);
    return c.json({ key, size: object?.size ?? length }, 201);
  });

function ownedKey(hostId: string, key: string): string {
  if (!hostOwnsStagingKey(hostId, key)) throw new ApiError("not_found", "no such staged blob");
  return key;
}
