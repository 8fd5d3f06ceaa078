import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { FrameParser, framePayloads } from "../../agent/docker/frames";
import { demux, pump } from "../../agent/ssh/streams";

/** The SSH gateway's byte pump between a channel and a process: backpressure that never stalls; the engine's frames it reads. */

const MiB = 1024 * 1024;

/** A target that takes a chunk every few ms; `highWaterMark` says when its write() reports "full". */
function slowTarget(highWaterMark: number) {
  let received = 0;
  const target = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      setTimeout(callback, 1);
    },
  });
  return { target, received: () => received };
}

async function pumpThrough(highWaterMark: number, total: number) {
  const source = new PassThrough({ highWaterMark: 64 * 1024 });
  const { target, received } = slowTarget(highWaterMark);
  const finished = new Promise<void>((resolve) => target.once("finish", resolve));
  pump(source, target, () => undefined, true);
  const chunk = Buffer.alloc(256 * 1024, 7);
  for (let sent = 0; sent < total; sent += chunk.length) {
    if (!source.write(chunk)) await new Promise((r) => source.once("drain", r));
  }
  source.end();
  const stalled = new Promise<"stalled">((r) => setTimeout(() => r("stalled"), 10_000).unref());
  expect(await Promise.race([finished.then(() => "done" as const), stalled])).toBe("done");
  expect(received()).toBe(total);
}

describe("pump", () => {
  it("copies everything into a socket-like target that is full at 16 KiB", async () => {
    await pumpThrough(16 * 1024, 8 * MiB);
  });

  it("copies everything into a target whose high-water mark is above the pause limit", async () => {
    // The old pause waited for a 'drain' such a target never sends: write() had not said "full".
    await pumpThrough(4 * MiB, 8 * MiB);
  });
});

const frame = (type: number, payload: string) => {
  const body = Buffer.from(payload);
  const head = Buffer.alloc(8);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
};

describe("the engine's frames (agent/docker/frames.ts)", () => {
  const stream = Buffer.concat([frame(1, "out-1 "), frame(2, "err"), frame(1, ""), frame(1, "out-2")]);

  it("reads payloads whatever the chunking, headers split across chunks included", () => {
    for (const size of [1, 3, 7, 8, 9, stream.length]) {
      const frames = new FrameParser();
      const got: Record<number, string> = { 1: "", 2: "" };
      for (let o = 0; o < stream.length; o += size) {
        frames.push(stream.subarray(o, o + size), (type, p) => {
          got[type] += p.toString();
        });
      }
      expect(got, `chunks of ${size}`).toEqual({ 1: "out-1 out-2", 2: "err" });
    }
  });

  it("reads a whole buffer, and the SSH demux splits a stream into its two targets", async () => {
    expect(Buffer.concat(framePayloads(stream)).toString()).toBe("out-1 errout-2");
    const source = new PassThrough();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const collect = (into: Buffer[]) =>
      new Writable({
        write(chunk: Buffer, _e, cb) {
          into.push(chunk);
          cb();
        },
      });
    const done = demux(source, collect(out), collect(err), () => undefined);
    source.end(stream);
    await done;
    expect(Buffer.concat(out).toString()).toBe("out-1 out-2");
    expect(Buffer.concat(err).toString()).toBe("err");
  });
});
