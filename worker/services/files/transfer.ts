import { fail, ok, type Result } from "../../../shared/errors";
import { FILE_CONTENT_MAX_BYTES } from "../../../shared/protocol/files";
import { callHost } from "../../durable-objects/host-agent/client";
import {
  cancelRelay,
  MAX_RELAY_BYTES,
  newRelayId,
  relayStub,
} from "../../durable-objects/transfer-relay/client";
import type { ServiceContext, TeamCall } from "../context";
import { hostFailure, podTarget } from "../pods/target";
import { parentOf, podPathOf } from "./paths";
import { commitReceived, receiveInto, TRANSFER_TIMEOUT_MS } from "./receive";

/**
 * File bytes out of a running pod (and the JSON text routes), streamed through a TransferRelay
 * Durable Object (see ../../durable-objects/transfer-relay/object.ts) rather than stored on the way:
 * the agent PUTs a file as it reads it and the Worker hands that stream to the caller. Only the
 * relay's id crosses the host's Durable Object, and no side ever holds a whole file. Writes go the
 * other way (./receive.ts): a text edit and an upload are written alike, a temp file renamed over
 * the target, parents created.
 */

const MiB = 1024 * 1024;

type Background = (work: Promise<unknown>) => void;

type Incoming =
  | {
      sent: true;
      body: ReadableStream<Uint8Array>;
      /** always known for a download (the agent's PUT carries its Content-Length) */
      size: number | undefined;
      /** the host's answer, once the bytes were all taken (a failure there breaks `body` off) */
      done: Promise<Result<unknown>>;
    }
  | { sent: false; size: number };

/**
 * Have the host stream the file at `path` through a relay (unless it is over `maxBytes`). Resolves
 * as soon as the bytes start to flow, or with the host's refusal (missing file, permission, too
 * large) before any byte was sent, so the caller still gets the proper status.
 */
async function getFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  path: string,
  maxBytes: number,
): Promise<Result<Incoming>> {
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const { hostId } = target.value;
  const relay = newRelayId(hostId);
  const answer = callHost(
    ctx.env,
    hostId,
    "pod.files.download",
    { name, path, relay, maxBytes },
    { timeoutMs: TRANSFER_TIMEOUT_MS, teamId },
  );
  const bytes = Promise.resolve(relayStub(ctx.env, relay).consume()).catch((error: unknown) =>
    fail("unavailable", String(error)),
  );
  const first = await Promise.race([bytes.then((b) => ({ bytes: b })), answer.then((a) => ({ answer: a }))]);
  if ("bytes" in first) {
    if (first.bytes.ok) return ok({ sent: true, ...first.bytes.value, done: answer });
    // The host never started sending (the relay waited RELAY_WAIT_MS): its answer may come much
    // later, the caller is not kept waiting for it.
    return fail("unavailable", `the pod's host did not send ${path}: ${first.bytes.message}; try again`);
  }
  const r = first.answer;
  if (!r.ok || !r.value.found || !r.value.sent) {
    await cancelRelay(ctx.env, relay, "the host sent nothing");
    await bytes;
    if (!r.ok) return hostFailure(r, name);
    if (!r.value.found) return fail("not_found", `${path}: no such file or directory`);
    return ok({ sent: false, size: r.value.size });
  }
  // Sent already (a small file fits in the pipes' buffers): the bytes were taken before the answer.
  const taken = await bytes;
  if (!taken.ok) return fail("unavailable", `the file's bytes went missing in transit: ${taken.message}`);
  return ok({ sent: true, ...taken.value, done: answer });
}

/** `PUT …/files/content`: the text as UTF-8, parents created. */
export async function writePodFile({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; path: string; content: string }>): Promise<
  Result<{ status: "saved"; path: string }>
> {
  const { name } = input;
  const path = podPathOf("path", input.path);
  if (!path.ok) return path;
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const bytes = new TextEncoder().encode(input.content);
  const received = await receiveInto(
    ctx,
    { hostId: target.value.hostId, pod: name, teamId },
    parentOf(path.value),
    new Blob([bytes]).stream(),
    {
      maxBytes: bytes.length,
      size: bytes.length,
      tooLarge: () => fail("internal", "the text grew in transit"),
    },
  );
  if (!received.ok) return received;
  const written = await commitReceived(ctx, received.value, path.value);
  return written.ok ? ok({ status: "saved", path: written.value }) : written;
}

/**
 * `GET …/files/content`: a file as text. It must be valid UTF-8 (kept exactly, a BOM included) and
 * at most 5 MiB; anything else is 400 pointing at the download route, which takes any bytes.
 */
export async function readPodFile({
  ctx,
  teamId,
  input: { name, path: requested },
}: TeamCall<{ name: string; path: string }>): Promise<Result<{ path: string; content: string }>> {
  const path = podPathOf("path", requested);
  if (!path.ok) return path;
  const incoming = await getFile(ctx, teamId, name, path.value, FILE_CONTENT_MAX_BYTES);
  if (!incoming.ok) return incoming;
  const useDownload = "use GET /api/pods/{name}/files/download for this file";
  if (!incoming.value.sent) {
    return fail(
      "bad_request",
      `path: ${path.value} is ${incoming.value.size} bytes; content reads are limited to ${FILE_CONTENT_MAX_BYTES / MiB} MiB: ${useDownload}`,
    );
  }
  // At most 5 MiB, read here in the Worker (never in a Durable Object); whole only if the host says so.
  const read = await new Response(incoming.value.body).arrayBuffer().then(
    (b) => ok(b),
    (error: unknown) => fail("unavailable", `the file's bytes broke off in transit: ${String(error)}`),
  );
  const done = await incoming.value.done;
  if (!done.ok) return hostFailure(done, name);
  if (!read.ok) return read;
  try {
    const content = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(read.value);
    return ok({ path: path.value, content });
  } catch {
    return fail("bad_request", `path: ${path.value} is not UTF-8 text; ${useDownload}`);
  }
}

export interface DownloadView {
  body: ReadableStream<Uint8Array>;
  size: number | undefined;
  filename: string;
}

/**
 * `GET …/files/download`: the raw bytes as a stream of known length, straight from the agent. The
 * host's answer comes once the caller read everything (or went away); `background` keeps the Worker
 * for it.
 */
export async function downloadPodFile({
  ctx,
  teamId,
  input: { name, path: requested },
  background,
}: TeamCall<{ name: string; path: string }> & { background: Background }): Promise<Result<DownloadView>> {
  const path = podPathOf("path", requested);
  if (!path.ok) return path;
  const incoming = await getFile(ctx, teamId, name, path.value, MAX_RELAY_BYTES);
  if (!incoming.ok) return incoming;
  if (!incoming.value.sent) {
    return fail(
      "payload_too_large",
      `path: ${path.value} is ${incoming.value.size} bytes; downloads are limited to ${MAX_RELAY_BYTES / MiB} MiB: copy it over SSH (scp, sftp, rsync)`,
    );
  }
  const { body, size, done } = incoming.value;
  background(
    done.then((r) => {
      if (!r.ok) console.warn(JSON.stringify({ msg: "download broke off", pod: name, error: r.message }));
    }),
  );
  return ok({ body, size, filename: path.value.slice(path.value.lastIndexOf("/") + 1) });
}

/**
 * `Content-Disposition: attachment` naming the file: an ASCII fallback in `filename` (quotes,
 * backslashes, `%` and anything outside printable ASCII replaced) and the exact name in RFC 6266's
 * `filename*` (UTF-8, percent-encoded).
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_") || "download";
  let exact: string;
  try {
    exact = encodeURIComponent(filename).replace(
      /['()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  } catch {
    return `attachment; filename="${fallback}"`; // a lone surrogate cannot be encoded
  }
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}
