import type { Readable, Writable } from "node:stream";
import { FrameParser, STDERR } from "../docker/frames";

/**
 * Byte plumbing between an SSH channel and a docker exec stream, with backpressure both ways (a
 * 100 MB `scp` must not be buffered in the agent's memory) and an activity callback for the idle
 * timer. Binary-safe: nothing here looks at the bytes except the engine's frame headers.
 */

/**
 * How much may wait in a target before its source is paused. Sockets say "full" at 16 KiB, less than
 * one SSH packet: pausing there costs a pause/drain/resume round per packet on a bulk copy.
 */
const BUFFERED_LIMIT = 1024 * 1024;

/** Copy `from` into `to` until `from` ends; `end` decides whether `to` is ended then. */
export function pump(from: Readable, to: Writable, onData: () => void, end: boolean): void {
  let corked = false;
  from.on("data", (chunk: Buffer) => {
    onData();
    // Packets that arrive in one turn of the event loop leave in one writev.
    if (!corked) {
      corked = true;
      to.cork();
      process.nextTick(() => {
        corked = false;
        to.uncork();
      });
    }
    // Paused only once a write said "full" (then a 'drain' is sure to come) and more than the limit
    // waits. A target whose own high-water mark is above the limit (an SSH channel's can be) says
    // "full" later: pausing on the length alone waited for a 'drain' that never came.
    const accepted = to.write(chunk);
    if (!accepted && to.writableLength > BUFFERED_LIMIT && !from.isPaused()) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  if (end) from.once("end", () => to.end());
}

/** Small payloads for one target that arrive together are joined up to this size (one SSH packet). */
const JOIN_LIMIT = 32 * 1024;

/**
 * The engine's multiplexed output (no terminal; ../docker/frames.ts) into stdout and stderr.
 * Payloads are forwarded as they arrive, without waiting for whole frames, and the source is paused
 * while a target is full.
 * Consecutive small frames read at once (sftp-server answers each 32 KiB write with a few bytes)
 * leave as one write, so as one SSH packet rather than one each.
 */
export function demux(from: Readable, stdout: Writable, stderr: Writable, onData: () => void): Promise<void> {
  const frames = new FrameParser();
  from.on("data", (chunk: Buffer) => {
    onData();
    const full = new Set<Writable>();
    let parts: Buffer[] = [];
    let size = 0;
    let partsTarget: Writable = stdout;
    const flush = () => {
      if (parts.length === 0) return;
      const data = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
      if (!partsTarget.write(data)) full.add(partsTarget);
      parts = [];
      size = 0;
    };
    frames.push(chunk, (type, payload) => {
      const target = type === STDERR ? stderr : stdout;
      if (target !== partsTarget || size + payload.length > JOIN_LIMIT) flush();
      partsTarget = target;
      parts.push(payload);
      size += payload.length;
    });
    flush();
    if (full.size > 0) {
      from.pause();
      let waiting = full.size;
      for (const w of full) {
        w.once("drain", () => {
          if (--waiting === 0) from.resume();
        });
      }
    }
  });
  return new Promise((resolve) => {
    from.once("end", resolve);
    from.once("close", resolve);
    from.once("error", () => resolve());
  });
}

/** Resolves once everything written to `w` so far has been handed on (or `w` is gone). */
export function flushed(w: Writable): Promise<void> {
  if (w.destroyed || w.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      w.off("close", done);
      resolve();
    };
    w.once("close", done);
    w.write(Buffer.alloc(0), done);
  });
}
