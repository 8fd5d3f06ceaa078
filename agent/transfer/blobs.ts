import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AgentError } from "../errors";

/**
 * The agent's side of the control plane's staged blobs (worker/routes/agent-blobs.ts): bulk bytes
 * travel over plain HTTP streams with the host token, never over the control WebSocket.
 */
export interface BlobStore {
  /** the staged bytes as a stream (404 → not_found) */
  fetch(key: string, signal?: AbortSignal): Promise<{ body: Readable; size: number }>;
  /** stream exactly `size` bytes of `body` into the staged key */
  upload(key: string, body: Readable, size: number, signal?: AbortSignal): Promise<void>;
}

export function createBlobStore(apiUrl: string, agentToken: string): BlobStore {
  const urlOf = (key: string) => new URL(`/agent/blobs/${key}`, apiUrl);
  const authorization = `Bearer ${agentToken}`;

  return {
    async fetch(key, signal) {
      const res = await fetch(urlOf(key), { headers: { authorization }, signal });
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        throw new AgentError(
          res.status === 404 ? "not_found" : "unavailable",
          `staged blob ${key}: control plane answered ${res.status}`,
        );
      }
      const size = Number(res.headers.get("content-length") ?? Number.NaN);
      return { body: Readable.fromWeb(res.body as import("node:stream/web").ReadableStream), size };
    },

    async upload(key, body, size, signal) {
      const url = urlOf(key);
      const request = (url.protocol === "https:" ? https : http).request(url, {
        method: "PUT",
        headers: {
          authorization,
          "content-type": "application/octet-stream",
          "content-length": String(size),
        },
        signal,
      });
      const answered = new Promise<http.IncomingMessage>((resolve, reject) => {
        request.once("response", resolve);
        request.once("error", reject);
      });
      await pipeline(body, request);
      const res = await answered;
      const text = await new Promise<string>((resolve) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks).toString()));
        res.on("error", () => resolve(""));
      });
      if (res.statusCode !== 201)
        throw new AgentError("unavailable", `staging ${key} failed: ${res.statusCode} ${text.slice(0, 200)}`);
    },
  };
}
