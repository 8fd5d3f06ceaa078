import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { pump } from "../../agent/ssh/streams";

/** The SSH gateway's byte pump between a channel and a process: backpressure that never stalls. */

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
