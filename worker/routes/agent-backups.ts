import { Hono } from "hono";
import { unwrap } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";
import { openArchive, receiveArchive } from "../services/backups/host-bytes";

/**
 * Backup archives as the host agent sees them (docs/backups.md, shared/protocol/backups.ts),
 * authenticated with the host's agent token; a host reaches only the backups of pods it holds,
 * anything else is 404.
 * - `PUT /agent/backups/{id}`: the archive as `backup.create` makes it, streamed into R2, counted
 *   and hashed on the way: 201 `{bytes, sha256}`.
 * - `GET /agent/backups/{id}`: the archive streamed back with its Content-Length (restore, verify).
 */
export const agentBackupsRouter = new Hono<HostEnv>()
  .use("*", requireHostToken)
  .get("/:id", async (c) => {
    const archive = unwrap(await openArchive(c.env, c.get("db"), c.get("host").id, c.req.param("id")));
    return new Response(archive.body, {
      headers: { "content-length": String(archive.size), "content-type": "application/gzip" },
    });
  })
  .put("/:id", async (c) => {
    const stored = unwrap(
      await receiveArchive(c.env, c.get("db"), c.get("host").id, c.req.param("id"), c.req.raw.body),
    );
    return c.json(stored, 201);
  });
