import type http from "node:http";
import type { Readable } from "node:stream";
import type { ErrorCode } from "../../shared/errors";
import { AgentError } from "../errors";
import { controlPlaneRequest } from "./control-plane-http";

/**
 * The agent's side of the control plane's staged blobs (worker/routes/agent-blobs.ts): bulk bytes
 * travel over plain HTTP streams with the host token, never over the control WebSocket.
 */
export interface BlobStore {
  /** the bytes as a stream, with their Content-Length */
  fetch(key: string, signal?: AbortSignal): Promise<{ body: Readable; size: number }>;
  /** stream exactly `size` bytes of `body` to the key; a size not known up front goes chunked */
  upload(key: string, body: Readable, size: number | undefined, signal?: AbortSignal): Promise<unknown>;
}

export function createBlobStore(apiUrl: string, agentToken: string): BlobStore {
  return httpByteStore({
    apiUrl,
    agentToken,
    route: "/agent/blobs/",
    what: "staged blob",
    missing: "not_found",
  });
}

/** A BlobStore whose upload also hands back the body of the control plane's 201 (backups compare its count and hash). */
export interface ByteStore extends BlobStore {
  upload(key: string, body: Readable, size: number | undefined, signal?: AbortSignal): Promise<string>;
}

/**
 * A BlobStore over one of the control plane's agent-facing byte routes (`GET` and `PUT
 * {route}{id}`, 201 for a PUT): staged blobs here, streamed transfers in ./relay.ts, backups in
 * ../backups/store.ts.
 */
export function httpByteStore(o: {
  apiUrl: string;
  agentToken: string;
  route: string;
  /** names the id in errors */
  what: string;
  /** the code of a 404 (every other failure is `unavailable`) */
  missing: ErrorCode;
}): ByteStore {
  const urlOf = (id: string) => new URL(`${o.route}${id}`, o.apiUrl);
  const authorization = `Bearer ${o.agentToken}`;
  // A 5xx is the control plane failing (a restart answers 502/503 at its proxy): a workflow step
  // retries it; other refusals are answers about this transfer.
  const failure = (id: string, status: number | undefined, text: string) =>
    new AgentError(
      status === 404 ? o.missing : "unavailable",
      `${o.what} ${id}: control plane answered ${status}${text ? ` ${errorOf(text)}` : ""}`,
      status === undefined || status >= 500 ? "control_plane" : undefined,
    );

  return {
    async fetch(id, signal) {
      // node:http rather than fetch: the body comes as a plain Readable, with no web-stream layer to
      // cross per chunk (about half the CPU on a 32 MB transfer); sent again if it met a pooled
      // connection the server had just closed (./control-plane-http.ts)
      const { res } = await controlPlaneRequest(urlOf(id), {
        method: "GET",
        headers: { authorization },
        signal,
      });
      // the body breaking off mid-way is the control plane's doing too (a restart, a cut)
      if (res.statusCode !== 200) throw failure(id, res.statusCode, await textOf(res));
      const size = Number(res.headers["content-length"] ?? Number.NaN);
      return { body: res, size };
    },

    async upload(id, body, size, signal) {
      // a streamed body goes on a connection of its own and is never sent twice (./control-plane-http.ts)
      const { res, sent, stop } = await controlPlaneRequest(urlOf(id), {
        method: "PUT",
        headers: {
          authorization,
          "content-type": "application/octet-stream",
          ...(size === undefined ? {} : { "content-length": String(size) }),
        },
        body,
        signal,
      });
      // A refusal can come before the body is through (a relay whose other side went away answers at
      // once): then stop sending rather than wait for a pipe nobody reads.
      const text = await textOf(res);
      if (res.statusCode !== 201) {
        stop();
        throw failure(id, res.statusCode, text);
      }
      // With its size given, the 201 says the control plane read every byte. The connection (one of
      // its own, closed after the answer) can close before this side's stream ended, as a pod's
      // process closes its output a moment after its last byte: that is no failure of the upload.
      await sent.catch((err: unknown) => {
        if (size === undefined || (err as { code?: unknown }).code !== "ERR_STREAM_PREMATURE_CLOSE")
          throw err;
      });
      return text;
    },
  };
}

/** a (small) answer's body as text; "" when it breaks off */
const textOf = (res: http.IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(Buffer.concat(chunks).toString()));
    res.on("error", () => resolve(""));
  });

/** the `{error}` of a control plane's answer, else its first 200 characters */
function errorOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error.slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 200);
}
