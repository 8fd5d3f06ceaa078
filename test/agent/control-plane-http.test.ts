import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { toAgentError } from "../../agent/docker/client";
import { createBlobStore } from "../../agent/transfer/blobs";
import { IDLE_SOCKET_MS, REUSED_SOCKET_RETRIES } from "../../agent/transfer/control-plane-http";

/**
 * The agent's byte-route calls and a keep-alive connection the server closes as idle (issue 28's
 * soak: `pod.files.download: the control plane could not be reached (socket hang up)`, 503). The
 * double plays that race: it closes a kept-alive socket right as the next request arrives on it, so
 * the request fails before any answer, on a reused socket. A request that can be replayed is sent
 * again; a streamed body goes on a connection of its own and is never sent twice.
 */
describe("the agent's HTTP calls to the control plane", () => {
  let server: Server;
  let url: string;
  /** requests seen, by path (the ones the double cut included) */
  const seen: string[] = [];
  /** requests each socket carried */
  const perSocket = new Map<Socket, number>();
  const closed: Socket[] = [];
  /** the double's behaviour for the next requests */
  let mode: "cut-reused" | "cut-all" | "cut-body" | "answer-at-length" = "cut-reused";

  const bodyOf = (req: IncomingMessage) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve(Buffer.concat(chunks)));
      req.on("error", reject);
    });

  beforeAll(async () => {
    server = createServer({ keepAliveTimeout: 60_000 }, async (req, res) => {
      const socket = req.socket;
      const n = (perSocket.get(socket) ?? 0) + 1;
      perSocket.set(socket, n);
      seen.push(`${req.method} ${req.url}`);
      if (mode === "cut-all" || (mode === "cut-reused" && n > 1)) {
        // the idle close, seen by the client as its request meeting a closed connection
        socket.destroy();
        return;
      }
      if (req.method === "GET") {
        const text = `bytes of ${req.url}`;
        res.writeHead(200, { "content-length": String(Buffer.byteLength(text)) }).end(text);
        return;
      }
      if (mode === "cut-body") {
        // the connection breaks once part of a streamed body came
        req.once("data", () => socket.destroy());
        return;
      }
      if (mode === "answer-at-length") {
        // as the local workerd on a connection the client will not keep: once the Content-Length's
        // bytes came, the answer, and the connection closed
        const want = Number(req.headers["content-length"]);
        let got = 0;
        req.on("data", (c: Buffer) => {
          got += c.length;
          if (got < want) return;
          res.writeHead(201, { "content-type": "application/json", connection: "close" });
          res.end(JSON.stringify({ got }), () => socket.destroy());
        });
        return;
      }
      const body = await bodyOf(req);
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ got: body.length }));
    });
    server.on("connection", (socket: Socket) => socket.once("close", () => closed.push(socket)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(() => {
    seen.length = 0;
    mode = "cut-reused";
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const text = async (body: Readable) => {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString();
  };

  it("a GET that meets a kept-alive socket closed under it is sent again and succeeds", async () => {
    const store = createBlobStore(url, "token");
    expect(await text((await store.fetch("one")).body)).toBe("bytes of /agent/blobs/one");
    // the second GET goes on the pooled connection, which the double closes as it arrives
    const second = await store.fetch("two");
    expect(await text(second.body)).toBe("bytes of /agent/blobs/two");
    expect(seen).toEqual(["GET /agent/blobs/one", "GET /agent/blobs/two", "GET /agent/blobs/two"]);
  });

  it("a GET is sent again only after a reused socket failed, a bounded number of times", async () => {
    const store = createBlobStore(url, "token");
    const cut = async (id: string) => {
      mode = "cut-all";
      try {
        return await store.fetch(id).then(
          () => new Error("expected a failure"),
          (e: unknown) => e,
        );
      } finally {
        mode = "cut-reused";
      }
    };
    // one connection idles in the pool: the first try goes on it, the second on a fresh connection,
    // whose failure is not the idle race and is not sent again
    await text((await store.fetch("warm")).body);
    const err = await cut("gone");
    const mapped = toAgentError(err, "pod.files.receive");
    expect(mapped).toMatchObject({ code: "unavailable", component: "control_plane" });
    expect(mapped.message).toMatch(/^pod\.files\.receive: the control plane could not be reached \(.+\)$/);
    expect(seen.filter((s) => s === "GET /agent/blobs/gone")).toHaveLength(2);
    // several idle connections, every one cut: tried 1 + REUSED_SOCKET_RETRIES times, then it fails
    await Promise.all(["a", "b", "c", "d"].map(async (id) => text((await store.fetch(id)).body)));
    await cut("bound");
    expect(seen.filter((s) => s === "GET /agent/blobs/bound")).toHaveLength(1 + REUSED_SOCKET_RETRIES);
  });

  it("a streamed upload after a GET goes on a connection of its own, so the idle close cannot cut it", async () => {
    const store = createBlobStore(url, "token");
    await text((await store.fetch("warm")).body); // a pooled connection now idles
    const answer = await store.upload("up", Readable.from([Buffer.from("hello "), Buffer.from("world")]), 11);
    expect(JSON.parse(String(answer))).toEqual({ got: 11 });
    // (the GET itself may have met an idle connection of an earlier case and been sent again)
    expect(seen.filter((s) => !s.startsWith("GET /agent/blobs/warm"))).toEqual(["PUT /agent/blobs/up"]);
  });

  it("a streamed upload whose connection breaks mid-body is not replayed: it fails, the control plane's", async () => {
    mode = "cut-body";
    const store = createBlobStore(url, "token");
    let reads = 0;
    const body = new Readable({
      read() {
        reads++;
        this.push(reads <= 64 ? Buffer.alloc(16 * 1024, 1) : null);
      },
    });
    const err = await store.upload("half", body, undefined).then(
      () => new Error("expected a failure"),
      (e: unknown) => e,
    );
    const mapped = toAgentError(err, "pod.files.download");
    expect(mapped).toMatchObject({ code: "unavailable", component: "control_plane" });
    expect(mapped.message).toMatch(/^pod\.files\.download: the control plane could not be reached \(.+\)$/);
    expect(seen).toEqual(["PUT /agent/blobs/half"]);
  });

  it("a sized upload the control plane took whole (201) succeeds though the connection closed before the body's stream ended", async () => {
    mode = "answer-at-length";
    const store = createBlobStore(url, "token");
    // a pod's file: every byte out, then the process closes its output a moment later
    let pushed = false;
    const body = new Readable({
      read() {
        if (pushed) return;
        pushed = true;
        this.push(Buffer.from("old content\n"));
        setTimeout(() => this.push(null), 300);
      },
    });
    const answer = await store.upload("whole", body, 12);
    expect(JSON.parse(String(answer))).toEqual({ got: 12 });
  });

  it("an idle pooled connection is let go by the agent before the server's 5 s", async () => {
    const store = createBlobStore(url, "token");
    const before = closed.length;
    const socketsBefore = perSocket.size;
    await text((await store.fetch("idle")).body);
    const socket = [...perSocket.keys()].at(-1);
    expect(perSocket.size).toBeGreaterThanOrEqual(socketsBefore);
    const started = Date.now();
    while (socket && !closed.includes(socket) && Date.now() - started < IDLE_SOCKET_MS + 2_900)
      await new Promise((r) => setTimeout(r, 50));
    expect(closed.length).toBeGreaterThan(before);
    expect(socket && closed.includes(socket)).toBe(true);
    // the server (keepAliveTimeout 60 s) did not close it: the agent did, within its idle limit
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
