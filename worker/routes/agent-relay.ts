import { Hono } from "hono";
import { hostOwnsRelay, MAX_RELAY_BYTES, relayStub } from "../durable-objects/transfer-relay/client";
import { ApiError } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";

/**
 * Streamed transfers as the host agent sees them (see ./object.ts),
 * authenticated with the host's agent token; a host reaches only relays named after its own id,
 * anything else is 404.
 * - `GET /agent/relay/{id}`: the bytes a caller is uploading, as they arrive (with Content-Length
 *   when the caller's size is known; otherwise chunked, and cut off without its last chunk when
 *   the upload breaks off).
 * - `PUT /agent/relay/{id}`: a file the agent reads on the host (Content-Length required), handed to
 *   the caller waiting for it. Answered once every byte went through.
 * - `PUT /agent/relay/live/{id}`: a live stream of unknown length (chunked: a followed log, bounded
 *   in time by the host, ../../agent/inside/follow.ts), handed to the caller as it comes. Answered
 *   when it ended, or at once when the caller went away.
 */
export const agentRelayRouter = new Hono<HostEnv>()
  .use("*", requireHostToken)
  .put("/live/:id{.+}", async (c) => {
    const id = ownedRelay(c.get("host").id, c.req.param("id"));
    const body = c.req.raw.body;
    if (!body) throw new ApiError("bad_request", "a live stream needs a body");
    const sent = await relayStub(c.env, id).produce(body);
    if (!sent.ok) throw new ApiError(sent.code, sent.message);
    return c.json({ id }, 201);
  })
  .get("/:id{.+}", async (c) => {
    const id = ownedRelay(c.get("host").id, c.req.param("id"));
    const bytes = await relayStub(c.env, id).consume();
    if (!bytes.ok) throw new ApiError(bytes.code, bytes.message);
    const { body, size } = bytes.value;
    const headers: Record<string, string> = { "content-type": "application/octet-stream" };
    if (size !== undefined) headers["content-length"] = String(size);
    return new Response(body, { headers });
  })
  .put("/:id{.+}", async (c) => {
    const id = ownedRelay(c.get("host").id, c.req.param("id"));
    const length = Number(c.req.header("content-length") ?? Number.NaN);
    if (!Number.isSafeInteger(length) || length < 0)
      throw new ApiError("bad_request", "Content-Length required");
    if (length > MAX_RELAY_BYTES)
      throw new ApiError("payload_too_large", `a relayed file is at most ${MAX_RELAY_BYTES} bytes`);
    const body = c.req.raw.body ?? new Response(new Uint8Array()).body;
    if (!body) throw new ApiError("internal", "no request body");
    const sent = await relayStub(c.env, id).produce(body, length);
    if (!sent.ok) throw new ApiError(sent.code, sent.message);
    return c.json({ id, size: sent.value.size }, 201);
  });

function ownedRelay(hostId: string, id: string): string {
  if (!hostOwnsRelay(hostId, id)) throw new ApiError("not_found", "no such transfer");
  return id;
}
