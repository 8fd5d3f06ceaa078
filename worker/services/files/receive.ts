import { fail, ok, type Result } from "../../../shared/errors";
import { callHost } from "../../durable-objects/host-agent/client";
import { cancelRelay, newRelayId, relayStub } from "../../durable-objects/transfer-relay/client";
import type { ServiceContext } from "../context";
import { hostFailure } from "../pods/target";

/**
 * Bytes into a running pod, in two steps (shared/protocol/files.ts): `receive` streams them
 * through a TransferRelay (../../durable-objects/transfer-relay/object.ts) into a temp file in a
 * directory of the pod, then `commit` renames that over the target — or `discard` removes it. The
 * bytes can flow before the target or the size is known (a multipart form's `path` may come after
 * its file), and a transfer cut short is never put in place: only the Worker commits, and only
 * the size it counted itself.
 */

/** the agent's own limit is 280 s; this leaves room to reach it and answer */
export const TRANSFER_TIMEOUT_MS = 300_000;
const SMALL_OP_TIMEOUT_MS = 60_000;

export interface Received {
  hostId: string;
  pod: string;
  temp: string;
  size: number;
}

/**
 * Stream `body` into a new temp file in `dir` of the pod. `maxBytes` bounds it (413 past that);
 * `size`, when known, is announced to the relay. A failure of the caller's stream is reported as
 * `sourceFailure` makes it (its own 400 or 413), rather than as the host's broken transfer.
 */
export async function receiveInto(
  ctx: ServiceContext,
  target: { hostId: string; pod: string; teamId: string },
  dir: string,
  body: ReadableStream<Uint8Array>,
  opts: {
    maxBytes: number;
    size?: number;
    tooLarge: () => Result<never>;
    sourceFailure?: (error: unknown) => Result<never>;
  },
): Promise<Result<Received>> {
  const { hostId, pod, teamId } = target;
  const metered = meter(body, opts.maxBytes);
  const relay = newRelayId(hostId);
  // Offered first, so the bytes are waiting when the agent asks; settles once the agent read them
  // all, or when the transfer broke off.
  const offered = Promise.resolve(relayStub(ctx.env, relay).produce(metered.stream, opts.size)).catch(
    (error: unknown) => fail("unavailable", String(error)),
  );
  const r = await callHost(
    ctx.env,
    hostId,
    "pod.files.receive",
    { name: pod, dir, relay },
    { timeoutMs: TRANSFER_TIMEOUT_MS, teamId },
  );
  if (!r.ok) await cancelRelay(ctx.env, relay, `the host did not take the file: ${r.message}`);
  const sent = await offered;
  // The caller's side first: its fault explains the host's broken transfer.
  const failure = metered.failure();
  if (failure !== undefined) {
    if (r.ok) await discardReceived(ctx, { hostId, pod, temp: r.value.temp });
    if (failure instanceof TooLarge) return opts.tooLarge();
    return (
      opts.sourceFailure?.(failure) ?? fail("bad_request", `the upload broke off: ${messageOf(failure)}`)
    );
  }
  if (!r.ok) return hostFailure(r, pod);
  if (!sent.ok || r.value.size !== metered.bytes()) {
    await discardReceived(ctx, { hostId, pod, temp: r.value.temp });
    return fail(
      "unavailable",
      `the file's bytes went missing in transit${sent.ok ? "" : `: ${sent.message}`}`,
    );
  }
  return ok({ hostId, pod, temp: r.value.temp, size: r.value.size });
}

/** Put a received file in place as `path`; it is removed when that fails. */
export async function commitReceived(
  ctx: ServiceContext,
  received: Received,
  path: string,
): Promise<Result<string>> {
  const { hostId, pod, temp, size } = received;
  const r = await callHost(
    ctx.env,
    hostId,
    "pod.files.commit",
    { name: pod, temp, path, size },
    {
      timeoutMs: TRANSFER_TIMEOUT_MS,
    },
  );
  if (r.ok) return ok(r.value.path);
  await discardReceived(ctx, received);
  return hostFailure(r, pod);
}

/** Best effort: a temp file left behind is hidden, and the next upload's name differs. */
export async function discardReceived(
  ctx: ServiceContext,
  received: { hostId: string; pod: string; temp: string },
): Promise<void> {
  const r = await callHost(
    ctx.env,
    received.hostId,
    "pod.files.discard",
    { name: received.pod, temp: received.temp },
    { timeoutMs: SMALL_OP_TIMEOUT_MS },
  );
  if (!r.ok)
    console.warn(JSON.stringify({ msg: "could not discard an upload", pod: received.pod, error: r.message }));
}

class TooLarge extends Error {}

/**
 * `body` passed on chunk by chunk as it is read (nothing is read ahead of the consumer) and
 * counted. Past `maxBytes`, or when the source fails, it just ends: the failure is kept for the
 * caller, whose commit step (not the stream) decides that nothing lands. An errored stream would say
 * the same to the host, but workerd logs one crossing to a Durable Object as an uncaught exception.
 * The chunks are as large as the source makes them: a request body is read 1 MiB at a time
 * (../../../lib/request-body.ts), since every chunk costs a crossing to the relay.
 */
function meter(body: ReadableStream<Uint8Array>, maxBytes: number) {
  const reader = body.getReader();
  let bytes = 0;
  let failure: unknown;
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          bytes += value.byteLength;
          if (bytes > maxBytes) throw new TooLarge(`more than ${maxBytes} bytes`);
          controller.enqueue(value);
        } catch (error) {
          failure ??= error;
          controller.close(); // see above: ended, not errored
          await reader.cancel(error).catch(() => undefined);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return { stream, bytes: () => bytes, failure: () => failure };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
