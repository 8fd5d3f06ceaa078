import { DurableObject } from "cloudflare:workers";
import type { ErrorCode } from "../../../shared/errors";

/** how long a side that arrived waits for the other one before the transfer fails */
export const RELAY_WAIT_MS = 30_000;

/**
 * A Result without `extra` (whose `unknown` values DO RPC's types cannot carry), so a stub's caller
 * sees both branches.
 */
export type RelayResult<T> =
  | { ok: true; value: T }
  | { ok: false; code: Extract<ErrorCode, "conflict" | "unavailable">; message: string };

const ok = <T>(value: T): RelayResult<T> => ({ ok: true, value });
const fail = (code: "conflict" | "unavailable", message: string): RelayResult<never> => ({
  ok: false,
  code,
  message,
});

/** what the consumer receives: a stream of exactly `size` bytes (when the producer knew it) */
export interface RelayBytes {
  body: ReadableStream<Uint8Array>;
  size: number | undefined;
}

/**
 * One file transfer between an API caller and a host agent, streamed rather than stored: the side
 * that has the bytes (`produce`: the caller's upload, or the agent's PUT of a file it reads) and the
 * side that wants them (`consume`: the agent's GET, or the caller's download) meet here, and the
 * producer's stream is piped into the consumer's, chunk by chunk with backpressure. The object is
 * named `{hostId}/{uuid}` (./client.ts) and lives for one transfer; it keeps nothing in
 * storage and never a whole payload in memory.
 *
 * This works because a Durable Object may share I/O objects between the requests it serves: the
 * stream a producer's call brought stays readable by the consumer's call. Each side waits at most
 * `waitMs` for the other (then fails with a reason the caller turns into 503), and a side going away
 * breaks the pipe for the other: a caller who disconnects fails the agent's PUT, an agent that stops
 * reading fails the caller's upload.
 *
 * With a known size the pipe is a FixedLengthStream: workerd pumps a native stream into it without
 * JavaScript per chunk, a body shorter or longer than announced breaks the consumer's stream (never
 * a quietly cut file), and the consumer's response keeps its Content-Length. Without one (a
 * multipart upload streamed as it arrives) it is an IdentityTransformStream: the consumer's stream
 * ends only when the producer's did, and breaks when it broke.
 */
export class TransferRelay extends DurableObject {
  private channel: RelayBytes | undefined;
  private taken = false;
  /** why the transfer is over, once it failed or was cancelled */
  private ended: string | undefined;
  private pipeAbort: AbortController | undefined;
  private readonly wakers = new Set<() => void>();

  /**
   * Offer `body` (exactly `size` bytes, when known) and pipe it to the consumer once one comes.
   * Resolves when every byte went through (ok) or the transfer failed (the reason).
   */
  async produce(
    body: ReadableStream<Uint8Array>,
    size?: number,
    waitMs = RELAY_WAIT_MS,
  ): Promise<RelayResult<{ size: number | undefined }>> {
    if (this.ended || this.channel) {
      await body.cancel().catch(() => undefined);
      return fail(
        this.ended ? "unavailable" : "conflict",
        this.ended ?? "this transfer already has its bytes",
      );
    }
    const pipe = size === undefined ? new IdentityTransformStream() : new FixedLengthStream(size);
    this.channel = { body: pipe.readable, size };
    this.wake();
    if (!(await this.until(() => this.taken || this.ended !== undefined, waitMs)) || !this.taken) {
      const reason = this.end(`nobody came for the bytes within ${waitMs / 1000} s`);
      await Promise.all([body.cancel(reason), pipe.readable.cancel(reason)]).catch(() => undefined);
      return fail("unavailable", reason);
    }
    this.pipeAbort = new AbortController();
    try {
      await body.pipeTo(pipe.writable, { signal: this.pipeAbort.signal });
      return ok({ size });
    } catch (error) {
      return fail("unavailable", this.end(`the transfer broke off: ${messageOf(error)}`));
    }
  }

  /** The producer's bytes, once it came (at most `waitMs`); a transfer is consumed once. */
  async consume(waitMs = RELAY_WAIT_MS): Promise<RelayResult<RelayBytes>> {
    if (this.taken) return fail("conflict", "this transfer's bytes were already taken");
    await this.until(() => this.channel !== undefined || this.ended !== undefined, waitMs);
    if (this.ended) return fail("unavailable", this.ended);
    if (this.taken) return fail("conflict", "this transfer's bytes were already taken");
    if (!this.channel)
      return fail("unavailable", this.end(`the bytes did not come within ${waitMs / 1000} s`));
    this.taken = true;
    this.wake();
    return ok(this.channel);
  }

  /** Called off by whoever started it (the operation failed): every side still here fails. */
  async cancel(reason: string): Promise<void> {
    this.end(reason);
  }

  private end(reason: string): string {
    this.ended ??= reason;
    this.pipeAbort?.abort(new Error(this.ended));
    this.wake();
    return this.ended;
  }

  private wake(): void {
    for (const wake of [...this.wakers]) wake();
  }

  /** Resolves true once `done()` holds, false when `ms` passed first. */
  private until(done: () => boolean, ms: number): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        this.wakers.delete(check);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.wakers.delete(check);
        resolve(done());
      }, ms);
      this.wakers.add(check);
    });
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
