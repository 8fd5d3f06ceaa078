import { readFile } from "node:fs/promises";
import http from "node:http";
import { type AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentError } from "../../agent/errors";
import { createRelayClient } from "../../agent/transfer/relay";
import { settledWithin } from "./helpers";

/**
 * The agent's upload fetch (agent/transfer/relay.ts `pipe`): the host's curl GETs the relay and its
 * stdout is what a pod's process reads. A double of the control plane's `GET /agent/relay/{id}` on
 * 127.0.0.1 stands in for the Worker: whole bodies come with their size, anything less is refused,
 * and the host token never shows in curl's argv.
 */

const TOKEN = "host-token-relay-pipe-test";
const ID = "host-1/0b8a8a43-9a4e-4d7c-8f8e-5a4f3f1c2d10";
let server: http.Server;
let base: string;
/** what the double does with the next request */
let next: (req: http.IncomingMessage, res: http.ServerResponse) => void = () => undefined;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401).end('{"error":"unauthorized"}');
      return;
    }
    if (req.url !== `/agent/relay/${ID}`) {
      res.writeHead(404).end('{"error":"no such transfer"}');
      return;
    }
    next(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const read = (body: NodeJS.ReadableStream | undefined) =>
  new Promise<Buffer>((resolve) => {
    if (!body) throw new Error("no body: curl's stdout was handed on");
    const chunks: Buffer[] = [];
    body.on("data", (c: Buffer) => chunks.push(c));
    body.on("end", () => resolve(Buffer.concat(chunks)));
    body.on("error", () => resolve(Buffer.concat(chunks)));
  });

const opts = () => ({ signal: new AbortController().signal, timeoutS: 30 });

describe("relay pipe (the host's curl fetching an upload)", () => {
  it("settles once stopped, when its reader stopped reading a body larger than the pipes hold", async () => {
    // a pod's process that failed early (a full disk) reads no more: stop() must end curl and `done`
    const payload = Buffer.alloc(8 * 1024 * 1024, 5);
    next = (_req, res) => {
      res.writeHead(200, { "content-length": String(payload.length) });
      res.end(payload);
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    await new Promise((resolve) => setTimeout(resolve, 500)); // curl fills the pipes; nobody reads
    pipe.stop();
    const settled = await settledWithin(pipe.done, 5_000);
    expect(settled).not.toBe("hung");
  });

  it("hands on a chunked body whole, with its size", async () => {
    const payload = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    next = (_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" }); // no length: chunked
      res.write(payload.subarray(0, 1000));
      setTimeout(() => res.end(payload.subarray(1000)), 20);
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    const [bytes, done] = await Promise.all([read(pipe.body), pipe.done]);
    expect(bytes.equals(payload)).toBe(true);
    expect(done.size).toBe(payload.length);
  });

  it("keeps a small body whole for a reader that comes after curl exited (issue #28)", async () => {
    // The pod's process takes tens of ms to start (more through the engine, or on a busy host),
    // and a few KiB are fetched sooner: Node drops an exited child's stdout that nothing reads.
    const payload = Buffer.from(`0:1:${"ab".repeat(2048)}`);
    next = (_req, res) => {
      res.writeHead(200, { "content-length": String(payload.length) });
      res.end(payload);
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    expect((await pipe.done).size).toBe(payload.length); // curl exited
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pipe.body?.readableEnded).toBe(false); // no byte was taken before the reader came
    expect((await read(pipe.body)).equals(payload)).toBe(true);
  });

  it("refuses a 404 and a wrong token as unavailable, not as a body", async () => {
    const missing = createRelayClient(base, TOKEN).pipe("host-1/other", opts());
    await read(missing.body);
    await expect(missing.done).rejects.toThrow(/transfer host-1\/other: control plane answered 404/);
    const wrong = createRelayClient(base, "not-the-token").pipe(ID, opts());
    await read(wrong.body);
    const err = await wrong.done.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).code).toBe("unavailable");
    expect((err as AgentError).message).toMatch(/answered 401/);
  });

  it("a body cut off mid-way is never whole, though curl's stdout ends", async () => {
    next = (_req, res) => {
      res.writeHead(200, { "content-length": "100000" });
      res.write(Buffer.alloc(5000, 1));
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    const bytes = await read(pipe.body);
    expect(bytes.length).toBeLessThan(100000);
    await expect(pipe.done).rejects.toThrow(/the transfer broke off/);
  });

  it("fetches nothing for a reader gone before it began (its pipe already closed)", async () => {
    let asked = false;
    next = (_req, res) => {
      asked = true;
      res.writeHead(200).end("x");
    };
    const into = new Socket();
    into.destroy();
    const pipe = createRelayClient(base, TOKEN).pipe(ID, { ...opts(), into });
    await expect(pipe.done).rejects.toThrow(/the reader went away/);
    pipe.stop();
    expect(asked).toBe(false);
  });

  it("a reader that stops it (the pod's process failed) fails it", async () => {
    next = (_req, res) => {
      res.writeHead(200);
      res.write(Buffer.alloc(1000, 1)); // and never ends
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    await new Promise((resolve) => pipe.body?.once("data", resolve));
    pipe.stop();
    await expect(pipe.done).rejects.toThrow(/broke off/);
  });

  it("keeps the host token out of curl's argv (any user of the host can read /proc/<pid>/cmdline)", async () => {
    let cmdlines: string[] = [];
    next = (_req, res) => {
      res.writeHead(200);
      res.write("x");
      // while curl is mid-transfer: every curl's argv on the host
      void (async () => {
        const { readdir } = await import("node:fs/promises");
        const pids = (await readdir("/proc")).filter((p) => /^\d+$/.test(p));
        const lines = await Promise.all(
          pids.map((p) => readFile(`/proc/${p}/cmdline`, "utf8").catch(() => "")),
        );
        cmdlines = lines.filter((l) => l.startsWith("curl\0") && l.includes(ID));
        res.end("y");
      })();
    };
    const pipe = createRelayClient(base, TOKEN).pipe(ID, opts());
    const [bytes] = await Promise.all([read(pipe.body), pipe.done]);
    expect(bytes.toString()).toBe("xy");
    expect(cmdlines.length).toBe(1);
    expect(cmdlines[0]).not.toContain(TOKEN);
  });
});
