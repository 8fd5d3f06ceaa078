import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fail } from "../../shared/errors";
import { bytesReader, inspectZip } from "../../shared/zip/policy";
import { claimStagedBlob, incomingStagingKey, newStagingKey } from "../../worker/services/blobs/staging";
import { putStream } from "../../worker/services/blobs/stream-put";
import { inspectStagedZip } from "../../worker/services/zip/staged-archive";
import { buildZip, siteZip } from "../support/zip";
import { insertHost } from "./support/agent";

/**
 * Archives of up to 128 MiB never sit in the Worker: the form's `zip` part streams into R2
 * (putStream), and the table of contents is read back by ranges (inspectStagedZip) with the same
 * parser the agent runs on its copy, which must see exactly what an in-memory read sees.
 */

const MiB = 1024 * 1024;
const tooLarge = () => fail("payload_too_large", "too large");

/** `total` bytes of a pattern, in chunks of the given sizes (cycled) */
function chunked(total: number, sizes: number[]): { stream: ReadableStream<Uint8Array>; data: Uint8Array } {
  const data = new Uint8Array(total);
  for (let i = 0; i < total; i++) data[i] = (i * 7 + (i >>> 11)) & 0xff;
  let at = 0;
  let turn = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= total) return controller.close();
      const n = Math.min(sizes[turn++ % sizes.length] ?? 1, total - at);
      controller.enqueue(data.slice(at, at + n));
      at += n;
    },
  });
  return { stream, data };
}

/** compared by digest: a failed toEqual of megabytes prints more than the isolate holds */
const digest = async (bytes: Uint8Array | null) =>
  bytes ? [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].join(",") : null;

const stored = async (key: string) => {
  const object = await env.BLOBS.get(key);
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
};

describe("putStream", () => {
  it("stores a stream of unknown length byte for byte, in parts when it is large, and hashes it on the way", async () => {
    for (const total of [0, 1000, 8 * MiB, 8 * MiB + 1, 20 * MiB + 12_345]) {
      const key = `test/put-${total}`;
      const { stream, data } = chunked(total, [65_536, 1_000_003, 7]);
      const sha256 = [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))]
        .map((b) => b.toString(16).padStart(2, "0"))
        .join("");
      expect(await putStream(env.BLOBS, key, stream, { maxBytes: 32 * MiB, tooLarge })).toEqual({
        ok: true,
        value: { size: total, sha256 },
      });
      expect(await digest(await stored(key)), String(total)).toBe(await digest(data));
    }
  });

  it("stops past its limit and stores nothing, in one part or in several", async () => {
    for (const [total, max] of [
      [2 * MiB, MiB],
      [20 * MiB, 17 * MiB],
    ]) {
      const key = `test/too-big-${total}`;
      const { stream } = chunked(total as number, [MiB]);
      expect(await putStream(env.BLOBS, key, stream, { maxBytes: max as number, tooLarge })).toEqual(
        tooLarge(),
      );
      expect(await stored(key)).toBeNull();
    }
  });

  it("throws the source's failure and stores nothing", async () => {
    let sent = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 10 * MiB) return controller.error(new Error("the caller went away"));
        sent += MiB;
        controller.enqueue(new Uint8Array(MiB));
      },
    });
    await expect(
      putStream(env.BLOBS, "test/broken", broken, { maxBytes: 32 * MiB, tooLarge }),
    ).rejects.toThrow("the caller went away");
    expect(await stored("test/broken")).toBeNull();
  });
});

describe("claimStagedBlob", () => {
  it("hands an incoming blob to a host under a key of its own", async () => {
    const host = await insertHost();
    const incoming = incomingStagingKey();
    expect(incoming).toMatch(/^staging\/incoming\/[0-9a-f-]{36}$/);
    await env.BLOBS.put(incoming, "archive bytes");
    const claimed = newStagingKey(host.id);
    await claimStagedBlob(env, incoming, claimed);
    expect(new TextDecoder().decode((await stored(claimed)) ?? undefined)).toBe("archive bytes");
    expect(await stored(incoming)).toBeNull();
  });

  it("can run again once the blob was handed over (a retried workflow step)", async () => {
    const host = await insertHost();
    const incoming = incomingStagingKey();
    await env.BLOBS.put(incoming, "archive bytes");
    const claimed = newStagingKey(host.id);
    await claimStagedBlob(env, incoming, claimed);
    await claimStagedBlob(env, incoming, claimed);
    expect(new TextDecoder().decode((await stored(claimed)) ?? undefined)).toBe("archive bytes");
  });
});

describe("inspectStagedZip", () => {
  const staged = async (bytes: Uint8Array) => {
    const key = newStagingKey("host_test");
    await env.BLOBS.put(key, bytes);
    return inspectStagedZip(env.BLOBS, key, bytes.length);
  };

  it("sees what a read in memory sees, for good and broken archives alike", async () => {
    const site = await siteZip();
    const padded = await buildZip(
      [
        { name: "index.html", data: "x" },
        { name: "big.bin", data: new Uint8Array(3 * MiB).map((_, i) => (i * 2654435761) >>> 24), method: 0 },
        { name: "after.txt", data: "after" },
      ],
      { comment: "c".repeat(60_000) },
    );
    const cases: Uint8Array[] = [
      site,
      padded,
      site.subarray(0, site.length - 30),
      new TextEncoder().encode("not a zip"),
      await buildZip([
        { name: "index.html", data: "x" },
        { name: "../evil", data: "y" },
      ]),
    ];
    for (const bytes of cases) expect(await staged(bytes)).toEqual(inspectZip(bytesReader(bytes)));
  });

  it("reads many entries, their local headers picked from one streamed pass", async () => {
    const entries = [{ name: "index.html", data: "<h1>many</h1>" }];
    for (let i = 0; i < 3000; i++)
      entries.push({ name: `assets/file-${i}.txt`, data: `content ${i} `.repeat(i % 50) });
    const bytes = await buildZip(entries);
    const result = await staged(bytes);
    expect(result).toEqual(inspectZip(bytesReader(bytes)));
    expect(result).toMatchObject({ ok: true, value: { files: 3001 } });
  });

  it("refuses entries that share their bytes (a zip bomb), as the agent would", async () => {
    const bytes = await buildZip([
      { name: "index.html", data: "x" },
      { name: "a.txt", data: "shared" },
      { name: "b.txt", data: "shared" },
    ]);
    // point b.txt's central header at a.txt's local header
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const cdOffset = dv.getUint32(bytes.length - 6, true);
    const headers: number[] = [];
    for (let p = cdOffset; dv.getUint32(p, true) === 0x02014b50; ) {
      headers.push(p);
      p += 46 + dv.getUint16(p + 28, true) + dv.getUint16(p + 30, true) + dv.getUint16(p + 32, true);
    }
    const [, a, b] = headers as [number, number, number];
    dv.setUint32(b + 42, dv.getUint32(a + 42, true), true);
    const result = await staged(bytes);
    expect(result).toEqual(inspectZip(bytesReader(bytes)));
    expect(result).toMatchObject({ ok: false, message: expect.stringMatching(/share their data|zip bomb/) });
  });
});
