import { Hono } from "hono";
import { fail } from "../../shared/errors";
import { ApiError, unwrap } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";
import { rangedBody } from "../services/blobs/ranged-get";
import { hostOwnsStagingKey } from "../services/blobs/staging";
import { putStream } from "../services/blobs/stream-put";

/** the largest home a clone carries across hosts (the biggest plan's disk, with room) */
export const MAX_STAGED_UPLOAD_BYTES = 64 * 1024 ** 3;

/**
 * Staged blobs as the host agent sees them (see services/blobs/staging.ts), authenticated with the
 * host's agent token; a host reaches only keys under its own id, anything else is 404.
 * - `GET /agent/blobs/{key}`: the bytes a caller sent, streamed from R2.
 * - `PUT /agent/blobs/{key}`: bytes a host sends for another host (a pod's home, cloned across
 *   hosts), streamed into R2 whatever their length; 201 once stored whole.
 * (File transfers that live and die with one request stream through a relay instead,
 * worker/routes/agent-relay.ts.)
 */
export const agentBlobsRouter = new Hono<HostEnv>()
  .use("*", requireHostToken)
  .get("/:key{.+}", async (c) => {
    const key = ownedKey(c.get("host").id, c.req.param("key"));
    const object = await c.env.BLOBS.head(key);
    if (!object) throw new ApiError("not_found", "no such staged blob");
    return new Response(rangedBody(c.env.BLOBS, object), {
      headers: { "content-length": String(object.size), "content-type": "application/octet-stream" },
    });
  })
  .put("/:key{.+}", async (c) => {
    const key = ownedKey(c.get("host").id, c.req.param("key"));
    const body = c.req.raw.body;
    if (!body) throw new ApiError("bad_request", "the blob's bytes are missing");
    const stored = unwrap(
      await putStream(c.env.BLOBS, key, body, {
        maxBytes: MAX_STAGED_UPLOAD_BYTES,
        tooLarge: () =>
          fail("payload_too_large", `a staged blob holds at most ${MAX_STAGED_UPLOAD_BYTES} bytes`),
      }),
    );
    return c.json({ size: stored.size }, 201);
  });

function ownedKey(hostId: string, key: string): string {
  if (!hostOwnsStagingKey(hostId, key)) throw new ApiError("not_found", "no such staged blob");
  return key;
}
