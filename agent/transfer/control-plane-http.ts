import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { markControlPlane } from "../errors";

/**
 * Every HTTP request the agent makes to the control plane's byte routes (./blobs.ts: staged blobs,
 * relayed file bytes, backups) goes through here. The control WebSocket (../main.ts) and a
 * terminal's relay dial their own connection, and ./relay.ts's `pipe` is the host's curl, which
 * keeps no pool; neither meets what this module is for.
 *
 * **A reused keep-alive socket.** A request sent on a pooled connection that the server has just
 * closed as idle fails before any answer (`ECONNRESET`, "socket hang up"): the server never saw it.
 * Node's docs advise sending such a request again when it can be replayed (`req.reusedSocket`). So a
 * request without a body or with its body in memory is sent again, up to `REUSED_SOCKET_RETRIES`
 * times, on exactly that failure: the socket was a reused one and no byte of an answer came.
 * A streamed body cannot be sent again once its first bytes left (they were read from a pipe), so
 * such a request goes on a connection of its own, never a reused one, and the race cannot happen;
 * if its connection fails, the request fails (marked as the control plane's) and is not replayed.
 *
 * **Idle sockets.** The pool closes a connection idle for `IDLE_SOCKET_MS`, below the local workerd's
 * 5 s (kj's `pipelineTimeout`) and Node's own 5 s default: the agent lets go of a connection before
 * the server does, which keeps the race above rare, not only recovered.
 */

/** an idle pooled connection is closed after this long (the server's limit is 5 s) */
export const IDLE_SOCKET_MS = 2_000;
/** how many times a replayable request that failed on a reused socket before any answer is sent again */
export const REUSED_SOCKET_RETRIES = 2;

const pooled = {
  http: new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: "lifo" }),
  https: new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: "lifo" }),
};
/** a connection per request, closed after it: for streamed bodies */
const own = {
  http: new http.Agent({ keepAlive: false }),
  https: new https.Agent({ keepAlive: false }),
};

export interface ControlPlaneRequest {
  method: "GET" | "PUT" | "POST";
  headers: Record<string, string>;
  /** none; bytes in memory (sent again as they are); or a stream (sent once, on a connection of its own) */
  body?: Buffer | Readable;
  signal?: AbortSignal;
}

export interface ControlPlaneAnswer {
  /** the answer, its body not yet read; a failure of that body is marked as the control plane's */
  res: http.IncomingMessage;
  /**
   * settles once a streamed body was written whole (at once for no body or bytes in memory);
   * rejects with the body's own failure or the connection's
   */
  sent: Promise<void>;
  /** stop sending (an answer that refuses came before the body was through) */
  stop(): void;
}

/**
 * Send `o` to `url` and resolve with the answer's head as soon as it arrives (for a streamed body,
 * possibly before the body is through: a refusal can come first). A failure of the connection is
 * marked as the control plane's (../errors.ts `markControlPlane`); a failure of a streamed body
 * itself is the caller's and reaches it unmarked.
 */
export async function controlPlaneRequest(url: URL, o: ControlPlaneRequest): Promise<ControlPlaneAnswer> {
  const replayable = o.body === undefined || Buffer.isBuffer(o.body);
  for (let attempt = 0; ; attempt++) {
    try {
      return await attemptOnce(url, o);
    } catch (err) {
      if (!(err instanceof ReusedSocketFailed)) throw err;
      if (!replayable || attempt >= REUSED_SOCKET_RETRIES || o.signal?.aborted) throw err.cause;
    }
  }
}

/** the request failed on a reused socket before any answer: the server never saw it */
class ReusedSocketFailed extends Error {
  constructor(override readonly cause: unknown) {
    super("reused socket failed");
  }
}

/** the failures a connection closed by the server gives a request written into it */
const resetLike = (err: unknown): boolean => {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return code === "ECONNRESET" || code === "EPIPE" || message === "socket hang up";
};

function attemptOnce(url: URL, o: ControlPlaneRequest): Promise<ControlPlaneAnswer> {
  const secure = url.protocol === "https:";
  const streamed = o.body !== undefined && !Buffer.isBuffer(o.body);
  const agent = streamed ? (secure ? own.https : own.http) : secure ? pooled.https : pooled.http;
  const request = (secure ? https : http).request(url, {
    method: o.method,
    headers: o.headers,
    signal: o.signal,
    agent,
  });
  // the connection's failures are the control plane's; a streamed body's own (an archive that
  // failed) are not, and reach the caller unmarked
  request.prependListener("error", markControlPlane);
  let sent: Promise<void>;
  if (streamed) {
    sent = pipeline(o.body as Readable, request);
  } else {
    request.end(o.body);
    sent = Promise.resolve();
  }
  sent.catch(() => undefined); // seen by the caller, or made moot by an early answer
  return new Promise<ControlPlaneAnswer>((resolve, reject) => {
    // a body that failed before any answer came fails the request with its own error
    if (streamed) sent.catch(reject);
    request.once("response", (res) => {
      res.prependListener("error", markControlPlane);
      resolve({
        res,
        sent,
        stop: () => {
          request.destroy();
          if (streamed) (o.body as Readable).destroy();
        },
      });
    });
    request.once("error", (err) => {
      if (request.reusedSocket && !streamed && resetLike(err)) reject(new ReusedSocketFailed(err));
      else reject(err);
    });
  });
}
