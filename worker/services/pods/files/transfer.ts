import { fail, ok, type Result } from "../../../../shared/errors";
import { FILE_UPLOAD_MAX_BYTES } from "../../../../shared/limits";
import { FILE_CONTENT_MAX_BYTES } from "../../../../shared/protocol/file-ops";
import { cancelRelay, MAX_RELAY_BYTES, newRelayId, relayStub } from "../../blobs/relay";
import type { ServiceContext } from "../../context";
import { callHost } from "../../hosts/host-client";
import { podTarget } from "../inside/target";
import { hostFailure } from "../power";
import { APP_ROOT, podPathOf, uploadNameOf } from "./paths";

/**
 * File bytes in and out of a running pod, streamed through a TransferRelay Durable Object (see
 * ../../../durable-objects/transfer-relay.ts) rather than stored on the way: the Worker offers what
 * the caller sent and the agent GETs it straight into `docker exec`, or the agent PUTs a file as it
 * reads it and the Worker hands that stream to the caller. Only the relay's id crosses the host's
 * Durable Object, and no side ever holds a whole file. The JSON `content` routes take the same way,
 * so a text edit and an upload are written alike: a temp file renamed over the target, parents
 * created.
 */

/** the agent's own limit is 280 s; this leaves room to reach it and answer */
const TRANSFER_TIMEOUT_MS = 300_000;
const MiB = 1024 * 1024;

type Background = (work: Promise<unknown>) => void;

/** Stream `size` bytes of `body` to the host, which writes them to `path`. */
async function putFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  path: string,
  body: ReadableStream<Uint8Array>,
  size: number,
): Promise<Result<string>> {
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) {
    await body.cancel();
    return target;
  }
  const { hostId } = target.value;
  const relay = newRelayId(hostId);
  // Offered first, so the bytes are waiting when the agent asks; the offer settles once the agent
  // read them all, or when the transfer is called off below.
  const offered = Promise.resolve(relayStub(ctx.env, relay).produce(body, size)).catch((error: unknown) =>
    fail("unavailable", String(error)),
  );
  const r = await callHost(
    ctx.env,
    hostId,
    "pod.files.upload",
    { name, path, relay, size },
    { timeoutMs: TRANSFER_TIMEOUT_MS },
  );
  if (!r.ok) await cancelRelay(ctx.env, relay, `the host did not take the file: ${r.message}`);
  await offered;
  return r.ok ? ok(r.value.path) : hostFailure(r, name);
}

type Incoming =
  | {
      sent: true;
      body: ReadableStream<Uint8Array>;
      size: number;
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
    { timeoutMs: TRANSFER_TIMEOUT_MS },
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

/** Multipart upload: `file` into the directory `dir` (default app root), under the part's name. */
export async function uploadPodFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  input: { file: File; dir?: string },
): Promise<Result<{ status: "uploaded"; path: string }>> {
  const dir = podPathOf("path", input.dir || APP_ROOT);
  if (!dir.ok) return dir;
  const filename = uploadNameOf(input.file.name);
  if (!filename.ok) return filename;
  const path = podPathOf("path", `${dir.value}/${filename.value}`);
  if (!path.ok) return path;
  if (input.file.size > FILE_UPLOAD_MAX_BYTES) {
    return fail(
      "payload_too_large",
      `file: ${input.file.size} bytes is over the upload limit of ${FILE_UPLOAD_MAX_BYTES} bytes (32 MiB); copy larger files over SSH (scp, sftp, rsync)`,
    );
  }
  const written = await putFile(ctx, teamId, name, path.value, input.file.stream(), input.file.size);
  return written.ok ? ok({ status: "uploaded", path: written.value }) : written;
}

/** `PUT …/files/content`: the text as UTF-8, parents created. */
export async function writePodFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  input: { path: string; content: string },
): Promise<Result<{ status: "saved"; path: string }>> {
  const path = podPathOf("path", input.path);
  if (!path.ok) return path;
  const bytes = new TextEncoder().encode(input.content);
  const written = await putFile(ctx, teamId, name, path.value, new Blob([bytes]).stream(), bytes.length);
  return written.ok ? ok({ status: "saved", path: written.value }) : written;
}

/**
 * `GET …/files/content`: a file as text. It must be valid UTF-8 (kept exactly, a BOM included) and
 * at most 5 MiB; anything else is 400 pointing at the download route, which takes any bytes.
 */
export async function readPodFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  input: string,
): Promise<Result<{ path: string; content: string }>> {
  const path = podPathOf("path", input);
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
  size: number;
  filename: string;
}

/**
 * `GET …/files/download`: the raw bytes as a stream of known length, straight from the agent. The
 * host's answer comes once the caller read everything (or went away); `background` keeps the Worker
 * for it.
 */
export async function downloadPodFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  input: string,
  background: Background,
): Promise<Result<DownloadView>> {
  const path = podPathOf("path", input);
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
