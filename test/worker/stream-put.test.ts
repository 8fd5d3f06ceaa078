import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fail } from "../../shared/errors";
import { putStream } from "../../worker/services/blobs/stream-put";

/**
 * putStream against the real local R2, with faults injected around it: a storage call that throws
 * now and then (R2's transient errors) is made again and the object is stored once, whole; one that
 * keeps throwing is a 503 value with nothing kept, never an exception that would answer 500.
 */

const MiB = 1024 * 1024;

const bytesOf = (n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 131 + 17) & 0xff;
  return out;
};

/** a stream of `data` in chunks of 1 MiB, as a request body arrives */
const streamOf = (data: Uint8Array) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < data.byteLength; at += MiB) controller.enqueue(data.slice(at, at + MiB));
      controller.close();
    },
  });

const sha256 = async (data: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

/**
 * The real bucket, whose part uploads (and single puts) throw for the calls `failing` picks (1-based,
 * counted across the upload); `aborted` counts the multipart uploads given up.
 */
function flakyBucket(failing: (call: number) => boolean) {
  let calls = 0;
  const state = { aborted: 0, calls: () => calls };
  const trip = () => {
    calls += 1;
    if (failing(calls)) throw new Error(`injected storage error #${calls}`);
  };
  const bucket = new Proxy(env.BLOBS, {
    get(target, prop) {
      if (prop === "put")
        return async (...args: Parameters<R2Bucket["put"]>) => {
          trip();
          return target.put(...args);
        };
      if (prop === "createMultipartUpload")
        return async (key: string) => {
          const upload = await target.createMultipartUpload(key);
          return {
            uploadPart: async (n: number, value: Uint8Array) => {
              trip();
              return upload.uploadPart(n, value);
            },
            complete: (parts: R2UploadedPart[]) => upload.complete(parts),
            abort: async () => {
              state.aborted += 1;
              return upload.abort();
            },
          };
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { bucket, state };
}

const limits = { maxBytes: 64 * MiB, tooLarge: () => fail("payload_too_large", "too large") };

describe("putStream", () => {
  it("sends a part again when storage throws once, and stores the object whole, once", async () => {
    const data = bytesOf(20 * MiB + 12_345); // three parts of 8 MiB, the last one short
    const { bucket, state } = flakyBucket((call) => call === 2);
    const key = `test/stream-put/${crypto.randomUUID()}`;
    const put = await putStream(bucket, key, streamOf(data), limits);
    expect(put).toEqual({ ok: true, value: { size: data.byteLength, sha256: await sha256(data) } });
    expect(state.calls()).toBe(4); // 3 parts and the one repeat
    const stored = await env.BLOBS.get(key);
    expect(stored?.size).toBe(data.byteLength);
    expect(await sha256(new Uint8Array(await (stored as R2ObjectBody).arrayBuffer()))).toBe(
      await sha256(data),
    );
  });

  it("retries a small object's single put too", async () => {
    const data = bytesOf(100_000);
    const { bucket } = flakyBucket((call) => call === 1);
    const key = `test/stream-put/${crypto.randomUUID()}`;
    expect((await putStream(bucket, key, streamOf(data), limits)).ok).toBe(true);
    expect((await env.BLOBS.get(key))?.size).toBe(data.byteLength);
  });

  it("answers 503 with nothing kept when storage keeps throwing", async () => {
    const data = bytesOf(17 * MiB);
    const { bucket, state } = flakyBucket((call) => call >= 2);
    const key = `test/stream-put/${crypto.randomUUID()}`;
    const put = await putStream(bucket, key, streamOf(data), limits);
    expect(put.ok).toBe(false);
    if (put.ok) return;
    expect(put.code).toBe("unavailable");
    expect(put.message).toMatch(/^storage did not take the bytes \(part 2: injected storage error #4\)/);
    expect(state.calls()).toBe(4); // part 1, then part 2 three times
    expect(state.aborted).toBe(1);
    expect(await env.BLOBS.head(key)).toBeNull();
  });
});
