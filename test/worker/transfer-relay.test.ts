import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newRelayId, relayStub } from "../../worker/durable-objects/transfer-relay/client";
import { insertHost } from "./support/agent";

/**
 * The TransferRelay Durable Object and the agent-facing `/agent/relay/{id}` routes: how file bytes
 * travel between a caller and a host agent without being stored on the way.
 */

const relayUrl = (id: string) => `http://localhost/agent/relay/${id}`;
const asHost = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  ...extra,
});

const bytes = (n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
};

/** byte for byte (vitest's deep equality takes seconds on megabytes) */
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** `data` as a stream, as a File's or a request's body is */
const streamOf = (data: Uint8Array) => new Blob([data]).stream();

describe("TransferRelay", () => {
  it("pairs a producer with the agent's GET: bytes identical, Content-Length kept", async () => {
    const host = await insertHost();
    const data = bytes(3 * 1024 * 1024 + 17);
    const id = newRelayId(host.id);
    const produced = relayStub(env, id).produce(streamOf(data), data.length);
    const res = await exports.default.fetch(relayUrl(id), { headers: asHost(host.token) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(data.length));
    expect(same(new Uint8Array(await res.arrayBuffer()), data)).toBe(true);
    expect(await produced).toEqual({ ok: true, value: { size: data.length } });
  });

  it("hands the agent's PUT to a consumer that came first; the PUT is answered once all was read", async () => {
    const host = await insertHost();
    const data = bytes(1024 * 1024 + 5);
    const id = newRelayId(host.id);
    const consumed = relayStub(env, id).consume();
    const put = exports.default.fetch(relayUrl(id), {
      method: "PUT",
      headers: asHost(host.token, { "content-length": String(data.length) }),
      body: data,
    });
    const taken = await consumed;
    if (!taken.ok) throw new Error(taken.message);
    expect(taken.value.size).toBe(data.length);
    const answered = { done: false };
    void put.then(() => {
      answered.done = true;
    });
    const reader = taken.value.body.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(answered.done).toBe(false);
    const chunks = [first.value as Uint8Array];
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      chunks.push(next.value);
    }
    expect(same(new Uint8Array(await new Blob(chunks).arrayBuffer()), data)).toBe(true);
    const res = await put;
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id, size: data.length });
  });

  it("keeps every host to its own transfers: another host's id or a made-up id is 404", async () => {
    const [owner, other] = [await insertHost(), await insertHost()];
    const id = newRelayId(owner.id);
    for (const attempt of [id, `${other.id}/../${id}`, `${other.id}/x`, "staging/y", other.id]) {
      const res = await exports.default.fetch(relayUrl(attempt), { headers: asHost(other.token) });
      expect(res.status, attempt).toBe(404);
      expect(await res.json()).toEqual({ error: expect.any(String) });
      const put = await exports.default.fetch(relayUrl(attempt), {
        method: "PUT",
        headers: asHost(other.token, { "content-length": "3" }),
        body: "bad",
      });
      expect(put.status, attempt).toBe(404);
    }
    for (const headers of [{}, { authorization: "Bearer not-a-host" }] as Record<string, string>[]) {
      expect((await exports.default.fetch(relayUrl(id), { headers })).status).toBe(401);
    }
  });

  it("refuses an agent's PUT without a length", async () => {
    const host = await insertHost();
    const res = await exports.default.fetch(relayUrl(newRelayId(host.id)), {
      method: "PUT",
      headers: asHost(host.token),
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(bytes(10));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/Content-Length/);
  });

  it("fails a side whose counterpart never comes, and then the latecomer too", async () => {
    const host = await insertHost();
    const lonelyConsumer = await relayStub(env, newRelayId(host.id)).consume(200);
    expect(lonelyConsumer).toMatchObject({ ok: false, code: "unavailable", message: /within 0.2 s/ });

    const id = newRelayId(host.id);
    const lonelyProducer = await relayStub(env, id).produce(streamOf(bytes(10)), 10, 200);
    expect(lonelyProducer).toMatchObject({ ok: false, code: "unavailable", message: /nobody came/ });
    const late = await exports.default.fetch(relayUrl(id), { headers: asHost(host.token) });
    expect(late.status).toBe(503);
    expect(((await late.json()) as { error: string }).error).toMatch(/nobody came/);
  });

  it("fails every side once cancelled", async () => {
    const host = await insertHost();
    const id = newRelayId(host.id);
    const waiting = relayStub(env, id).consume();
    await relayStub(env, id).cancel("the operation failed");
    expect(await waiting).toEqual({ ok: false, code: "unavailable", message: "the operation failed" });
    const put = await exports.default.fetch(relayUrl(id), {
      method: "PUT",
      headers: asHost(host.token, { "content-length": "3" }),
      body: "abc",
    });
    expect(put.status).toBe(503);
  });

  it("hands the bytes out once: a second consumer is 409", async () => {
    const host = await insertHost();
    const id = newRelayId(host.id);
    const produced = relayStub(env, id).produce(streamOf(bytes(100)), 100);
    const first = await exports.default.fetch(relayUrl(id), { headers: asHost(host.token) });
    const second = await exports.default.fetch(relayUrl(id), { headers: asHost(host.token) });
    expect(second.status).toBe(409);
    expect((await first.arrayBuffer()).byteLength).toBe(100);
    expect((await produced).ok).toBe(true);
  });

  it("breaks the pipe both ways: a consumer going away fails the producer, a short body the consumer", async () => {
    const host = await insertHost();
    const data = bytes(4 * 1024 * 1024);
    const id = newRelayId(host.id);
    const produced = relayStub(env, id).produce(streamOf(data), data.length);
    const res = await exports.default.fetch(relayUrl(id), { headers: asHost(host.token) });
    const reader = res.body?.getReader();
    await reader?.read();
    await reader?.cancel("caller went away");
    expect(await produced).toMatchObject({ ok: false, code: "unavailable", message: /broke off/ });

    // (a request body shorter than its Content-Length already fails in the HTTP layer)
    const shortId = newRelayId(host.id);
    const short = relayStub(env, shortId).produce(streamOf(bytes(1000)), 2000);
    const cut = await exports.default.fetch(relayUrl(shortId), { headers: asHost(host.token) });
    await expect(cut.arrayBuffer()).rejects.toThrow();
    await short;
  });
});
