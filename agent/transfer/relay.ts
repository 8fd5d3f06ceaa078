import { spawn } from "node:child_process";
import type { Socket } from "node:net";
import { PassThrough, type Readable } from "node:stream";
import { CappedBytes } from "../docker/capped";
import { AgentError } from "../errors";
import { type BlobStore, httpByteStore } from "./blobs";

/**
 * The agent's side of the control plane's streamed transfers (worker/routes/agent-relay.ts): `fetch`
 * reads what a caller is uploading as it arrives, `upload` hands a file to the caller waiting for
 * it and resolves once the caller took every byte. Any failure (the other side gone or never come)
 * is `unavailable`; a 404 too, since the id came from the control plane itself.
 */
export interface RelayClient extends BlobStore {
  /**
   * A live stream of unknown length into the relay (`PUT /agent/relay/live/{id}`, chunked: a
   * followed log), resolving once the caller's side ended it; it fails when the caller went away.
   */
  live(id: string, body: Readable, signal?: AbortSignal): Promise<void>;
  /**
   * What a caller is uploading (`GET /agent/relay/{id}`), fetched by the host's `curl` (Node's HTTP
   * client cost ~5× curl's CPU per byte: ~160 of a 32 MB upload's ~670 ms) for a process's stdin.
   * With `into` (the write end of a pipe another child reads: ../docker/exec-stream.ts `inlet`)
   * that pipe is curl's stdout and no byte passes through this agent; this agent's copy of it is
   * closed once curl has its own, so the reader sees the end when curl exits. Without it curl's
   * stdout is read here (`body`), never handed on as a descriptor: Node starts reading a child's
   * pipe at once, so the first bytes would stay here. `body` keeps every byte for a reader that
   * comes late, even after curl exited.
   * `done` resolves with the body's size once curl got all of it (the chunked body's end or its
   * Content-Length) and wrote it out; anything less (a 404 or 5xx, the connection cut, the reader
   * gone, `signal`, `timeoutS`) rejects as `unavailable`.
   */
  pipe(id: string, opts: { signal: AbortSignal; timeoutS: number; into?: Socket }): RelayPipe;
}

export interface RelayPipe {
  /** curl's stdout, when no `into` was given */
  body?: Readable;
  done: Promise<{ size: number }>;
  /** stop fetching (the reader failed): `done` rejects */
  stop(): void;
}

/** the host's curl (scripts/host/ensure-nginx.sh installs it) */
const CURL = "curl";
/** what curl writes to stderr after the transfer: the body's size and the HTTP status */
const WRITE_OUT = "%{stderr}\npodhost-relay %{size_download} %{http_code}\n";
const DONE_LINE = /\npodhost-relay (\d+) (\d{3})\n?$/;

export function createRelayClient(apiUrl: string, agentToken: string): RelayClient {
  const common = { apiUrl, agentToken, what: "transfer", missing: "unavailable" } as const;
  const files = httpByteStore({ ...common, route: "/agent/relay/" });
  const live = httpByteStore({ ...common, route: "/agent/relay/live/" });
  return {
    fetch: files.fetch,
    upload: files.upload,
    live: async (id, body, signal) => {
      await live.upload(id, body, undefined, signal);
    },
    pipe: (id, opts) => curlPipe(new URL(`/agent/relay/${id}`, apiUrl), agentToken, id, opts),
  };
}

/**
 * `GET url` by the host's curl, its body on curl's stdout. The token goes in on curl's stdin (`-H @-`),
 * never in its argv (which any user of the host can read); `-q` keeps a ~/.curlrc out of it.
 */
function curlPipe(
  url: URL,
  token: string,
  id: string,
  opts: { signal: AbortSignal; timeoutS: number; into?: Socket },
): RelayPipe {
  // as ./blobs.ts says it: a 5xx or no answer is the control plane failing, a 4xx an answer
  const failed = (detail: string, status = 0) =>
    new AgentError(
      "unavailable",
      `transfer ${id}: ${detail}`,
      status === 0 || status >= 500 ? "control_plane" : undefined,
    );
  if (opts.into?.destroyed) {
    // the reader is gone already (its process stopped or aborted): nothing to fetch for
    const gone = Promise.reject(failed("the reader went away before the transfer began"));
    gone.catch(() => undefined);
    return { done: gone, stop: () => undefined };
  }
  const child = spawn(
    CURL,
    [
      "-q",
      "--silent",
      "--show-error",
      "--fail",
      // every piece on to the reader as it arrives, not held in stdio's buffer until it fills
      "--no-buffer",
      "--proto",
      "=http,https",
      "--connect-timeout",
      "30",
      "--max-time",
      String(opts.timeoutS),
      "--header",
      "@-",
      "--write-out",
      WRITE_OUT,
      "--url",
      url.href,
    ],
    { stdio: ["pipe", opts.into ?? "pipe", "pipe"], signal: opts.signal },
  );
  // curl has its own copy: the reader's end comes only once every copy of the write end is closed
  opts.into?.destroy();
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(`authorization: Bearer ${token}\n`);
  const stderr = new CappedBytes(4096);
  child.stderr?.on("data", stderr.push);
  // Piped at once into a stream of this agent's: when curl exits, Node resumes any stdout of it that
  // nothing reads yet, dropping the bytes. A small body is often fetched whole before the process
  // that reads it has started (an engine exec is a few round trips); its bytes were then lost, the
  // process read an empty stdin, and the commit found a short file (issue #28). The bytes wait here
  // instead, bounded: past the stream's buffer curl's stdout is paused, so curl waits on its pipe.
  const stdout = child.stdout;
  const body = stdout ? new PassThrough() : undefined;
  if (stdout && body) {
    stdout.on("error", (err) => body.destroy(err)); // a failure is not an end; `done` says why
    stdout.pipe(body);
    body.on("error", () => undefined); // what broke is told by `done`
  }
  const done = new Promise<{ size: number }>((resolve, reject) => {
    child.once("error", (err) => reject(failed(`curl could not run: ${err.message}`)));
    child.once("close", (code, signal) => {
      const text = stderr.text();
      const end = DONE_LINE.exec(text);
      const status = Number(end?.[2] ?? 0);
      if (code === 0 && end && status === 200) return resolve({ size: Number(end[1]) });
      if (status >= 300) return reject(failed(`control plane answered ${status}`, status));
      const said = text.replace(DONE_LINE, "").trim().split("\n")[0]?.slice(0, 200) ?? "";
      reject(failed(`the transfer broke off (curl ${signal ?? `exit ${code}`}${said ? `: ${said}` : ""})`));
    });
  });
  done.catch(() => undefined);
  return {
    ...(body ? { body } : {}),
    done,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (!stdout || !body) return;
      // Nothing reads `body` any more: what curl printed is dropped, so its stdout can end and curl's
      // `close` (which `done` waits for) comes. Held in the full `body`, it never did: a write into a
      // full disk, whose process stopped reading, waited out the transfer's whole timeout.
      stdout.unpipe(body);
      stdout.resume();
      body.destroy();
    },
  };
}
