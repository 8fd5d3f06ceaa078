import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newStagingKey, STAGED_BLOB_TTL_MS, sweepStagedBlobs } from "../../worker/services/blobs/staging";
import { insertHost } from "./support/agent";

/** The agent-facing staged-blob routes: bulk bytes that must outlive a request (ZIP archives). */

const blobUrl = (key: string) => `http://localhost/agent/blobs/${key}`;
const asHost = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  ...extra,
});

const bytes = (n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
};

/** what a ZIP upload leaves for its host (the upload itself streams: see staged-zip.test.ts) */
async function stageBlob(hostId: string, body: Uint8Array | string): Promise<string> {
  const key = newStagingKey(hostId);
  await env.BLOBS.put(key, body);
  return key;
}

describe("/agent/blobs", () => {
  it("hands a staged upload to its host byte for byte", async () => {
    const host = await insertHost();
    const data = bytes(300_000);
    const key = await stageBlob(host.id, data);
    const res = await exports.default.fetch(blobUrl(key), { headers: asHost(host.token) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(data.length));
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(data);
  });

  it("keeps every host to its own keys: another host's key or a made-up key is 404", async () => {
    const [owner, other] = [await insertHost(), await insertHost()];
    const key = await stageBlob(owner.id, "secret");
    for (const attempt of [key, `staging/${other.id}/../${key}`, `staging/${other.id}/x`, "backups/y"]) {
      const res = await exports.default.fetch(blobUrl(attempt), { headers: asHost(other.token) });
      expect(res.status, attempt).toBe(404);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
    expect(await (await env.BLOBS.get(key))?.text()).toBe("secret");
  });

  it("needs a host token", async () => {
    const host = await insertHost();
    const key = await stageBlob(host.id, "x");
    for (const headers of [{}, { authorization: "Bearer not-a-host" }] as Record<string, string>[]) {
      const res = await exports.default.fetch(blobUrl(key), { headers });
      expect(res.status).toBe(401);
    }
  });

  it("sweeps blobs a crashed operation left behind, and only those", async () => {
    const host = await insertHost();
    const key = await stageBlob(host.id, "left behind");
    await sweepStagedBlobs(env);
    expect(await env.BLOBS.head(key)).not.toBeNull();
    await sweepStagedBlobs(env, Date.now() + STAGED_BLOB_TTL_MS + 1000);
    expect(await env.BLOBS.head(key)).toBeNull();
  });
});
