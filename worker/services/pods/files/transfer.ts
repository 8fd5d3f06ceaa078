import { fail, ok, type Result } from "../../../../shared/errors";
import { FILE_UPLOAD_MAX_BYTES } from "../../../../shared/limits";
import { FILE_CONTENT_MAX_BYTES } from "../../../../shared/protocol/file-ops";
import {
  discardStagedBlob,
  MAX_STAGED_BLOB_BYTES,
  newStagingKey,
  stageBlob,
  streamStagedBlob,
} from "../../blobs/staging";
import type { ServiceContext } from "../../context";
import { callHost } from "../../hosts/host-client";
import { podTarget } from "../inside/target";
import { hostFailure } from "../power";
import { APP_ROOT, podPathOf, uploadNameOf } from "./paths";

/**
 * File bytes in and out of a running pod. They travel as staged blobs in R2 (see
 * ../../blobs/staging.ts): the Worker stages what the caller sent and the agent streams it into the
 * pod, or the agent streams a file into a blob and the Worker hands it to the caller. Only keys
 * cross the host's Durable Object. The JSON `content` routes take the same way, so a text edit and
 * an upload are written alike: a temp file renamed over the target, parents created.
 */

/** the agent's own limit is 280 s; this leaves room to reach it and answer */
const TRANSFER_TIMEOUT_MS = 300_000;
const MiB = 1024 * 1024;

type Background = (work: Promise<unknown>) => void;

/** Stage `blob`, have the host write it to `path`, discard the blob whatever happened. */
async function putFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  path: string,
  blob: Blob,
): Promise<Result<string>> {
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const { hostId } = target.value;
  const key = await stageBlob(ctx.env, hostId, blob);
  try {
    const r = await callHost(
      ctx.env,
      hostId,
      "pod.files.upload",
      { name, path, key, size: blob.size },
      { timeoutMs: TRANSFER_TIMEOUT_MS },
    );
    return r.ok ? ok(r.value.path) : hostFailure(r, name);
  } finally {
    await discardStagedBlob(ctx.env, key);
  }
}

/**
 * Have the host stream the file at `path` into a fresh staged blob (unless it is over `maxBytes`).
 * On success the caller owns the blob's key; on failure it is already discarded.
 */
async function stageFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  path: string,
  maxBytes: number,
): Promise<Result<{ key: string; size: number; staged: boolean }>> {
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const { hostId } = target.value;
  const key = newStagingKey(hostId);
  const r = await callHost(
    ctx.env,
    hostId,
    "pod.files.download",
    { name, path, key, maxBytes },
    { timeoutMs: TRANSFER_TIMEOUT_MS },
  );
  if (!r.ok || !r.value.found || !r.value.staged) await discardStagedBlob(ctx.env, key);
  if (!r.ok) return hostFailure(r, name);
  if (!r.value.found) return fail("not_found", `${path}: no such file or directory`);
  return ok({ key, size: r.value.size, staged: r.value.staged });
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
  const written = await putFile(ctx, teamId, name, path.value, input.file);
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
  const written = await putFile(ctx, teamId, name, path.value, new Blob([input.content]));
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
  const staged = await stageFile(ctx, teamId, name, path.value, FILE_CONTENT_MAX_BYTES);
  if (!staged.ok) return staged;
  const { key, size } = staged.value;
  const useDownload = "use GET /api/pods/{name}/files/download for this file";
  if (!staged.value.staged) {
    return fail(
      "bad_request",
      `path: ${path.value} is ${size} bytes; content reads are limited to ${FILE_CONTENT_MAX_BYTES / MiB} MiB: ${useDownload}`,
    );
  }
  try {
    const object = await ctx.env.BLOBS.get(key);
    if (!object) return fail("unavailable", "the file's bytes went missing in transit; try again");
    const bytes = await object.arrayBuffer();
    try {
      const content = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
      return ok({ path: path.value, content });
    } catch {
      return fail("bad_request", `path: ${path.value} is not UTF-8 text; ${useDownload}`);
    }
  } finally {
    await discardStagedBlob(ctx.env, key);
  }
}

export interface DownloadView {
  body: ReadableStream<Uint8Array>;
  size: number;
  filename: string;
}

/** `GET …/files/download`: the raw bytes as a stream; the staged blob goes once it was read. */
export async function downloadPodFile(
  ctx: ServiceContext,
  teamId: string,
  name: string,
  input: string,
  background: Background,
): Promise<Result<DownloadView>> {
  const path = podPathOf("path", input);
  if (!path.ok) return path;
  const staged = await stageFile(ctx, teamId, name, path.value, MAX_STAGED_BLOB_BYTES);
  if (!staged.ok) return staged;
  if (!staged.value.staged) {
    return fail(
      "payload_too_large",
      `path: ${path.value} is ${staged.value.size} bytes; downloads are limited to ${MAX_STAGED_BLOB_BYTES / MiB} MiB: copy it over SSH (scp, sftp, rsync)`,
    );
  }
  const stream = await streamStagedBlob(ctx.env, staged.value.key, background);
  if (!stream) return fail("unavailable", "the file's bytes went missing in transit; try again");
  return ok({ ...stream, filename: path.value.slice(path.value.lastIndexOf("/") + 1) });
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
