import { afterEach, describe, expect, it, vi } from "vitest";
import { backoffDelay } from "../../agent/connection/backoff";
import { Dispatcher } from "../../agent/connection/dispatch";
import { AgentError } from "../../agent/errors";
import type { HandlerContext, HandlerTable } from "../../agent/handlers/types";
import type { Logger } from "../../agent/logger";
import { type ControlMessage, type Op, OpName, type PodState } from "../../shared/protocol";

/**
 * The agent's Dispatcher against a table of plain functions: what it does with params, idempotency
 * keys, timeouts, errors and shutdown, with no Docker behind it.
 */

type Call = Extract<ControlMessage, { type: "control:call" }>;

const quiet: Logger = { info() {}, warn() {}, error() {}, child: () => quiet };

/** Every op refuses to run unless the test wires it. */
function handlers(wired: Partial<HandlerTable>): HandlerTable {
  const unwired = async () => {
    throw new Error("not wired in this test");
  };
  const table = Object.fromEntries(OpName.options.map((op) => [op, unwired])) as unknown as HandlerTable;
  return { ...table, ...wired };
}

let counter = 0;
function callOf(op: Op, params: unknown, extra: Partial<Call> = {}): Call {
  counter += 1;
  return {
    type: "control:call",
    id: `call-${counter}`,
    idempotencyKey: `key-${counter}`,
    op,
    params,
    timeoutMs: 5_000,
    ...extra,
  };
}

/** A promise the test settles by hand: a command that is "still running" until it does. */
function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const running = (name: string): PodState => ({ name, state: "running", ip: "172.30.0.2" });

/** Whether `promise` is still pending after the event loop has had a turn. */
async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol("pending");
  return (await Promise.race([promise, new Promise((r) => setTimeout(() => r(marker), 10))])) === marker;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("Dispatcher", () => {
  it("answers under the call's id with the handler's value", async () => {
    const dispatcher = new Dispatcher(handlers({ "host.ping": async () => ({ pong: true }) }), quiet);
    const call = callOf("host.ping", {});
    expect(await dispatcher.handle(call)).toEqual({
      type: "agent:result",
      id: call.id,
      ok: true,
      data: { pong: true },
    });
  });

  it("validates params with the op's schema: bad ones are bad_request and never reach the handler", async () => {
    const stop = vi.fn(async ({ name }: { name: string }) => running(name));
    const dispatcher = new Dispatcher(handlers({ "pod.stop": stop }), quiet);
    for (const params of [{ name: "Not A Pod!" }, {}, null, { name: 42 }]) {
      const call = callOf("pod.stop", params);
      const result = await dispatcher.handle(call);
      expect(result, JSON.stringify(params)).toEqual({
        type: "agent:result",
        id: call.id,
        ok: false,
        error: { code: "bad_request", message: expect.stringContaining("invalid params for pod.stop") },
      });
    }
    expect(stop).not.toHaveBeenCalled();
  });

  it("hands the handler the parsed params, defaults applied", async () => {
    let received: unknown;
    const dispatcher = new Dispatcher(
      handlers({
        "pod.create": async (spec) => {
          received = spec;
          return running(spec.name);
        },
      }),
      quiet,
    );
    const spec = {
      podId: "pod_1",
      name: "shop",
      preset: "static",
      port: 8080,
      domain: "shop.pods.localhost",
      sshPort: 2201,
      limits: { cpu: 1, memoryMb: 512, diskGb: 5, pids: 256 },
    };
    expect((await dispatcher.handle(callOf("pod.create", spec))).ok).toBe(true);
    expect(received).toEqual({ ...spec, env: {}, cronJobs: [], workers: [], authorizedKeys: [] });
  });

  it("runs an idempotency key once, even when the copy arrives while the first run is in flight", async () => {
    const gate = deferred<PodState>();
    const restart = vi.fn(() => gate.promise);
    const dispatcher = new Dispatcher(handlers({ "pod.restart": restart }), quiet);
    const first = callOf("pod.restart", { name: "shop" }, { idempotencyKey: "restart-1" });
    const copy = callOf("pod.restart", { name: "shop" }, { idempotencyKey: "restart-1" });

    const answers = [dispatcher.handle(first), dispatcher.handle(copy)];
    await Promise.resolve();
    expect(restart).toHaveBeenCalledTimes(1);
    gate.resolve(running("shop"));
    const [a, b] = await Promise.all(answers);
    expect(a).toEqual({ type: "agent:result", id: first.id, ok: true, data: running("shop") });
    expect(b).toEqual({ type: "agent:result", id: copy.id, ok: true, data: running("shop") });

    // After the run: the recorded outcome, still without running again.
    const late = callOf("pod.restart", { name: "shop" }, { idempotencyKey: "restart-1" });
    expect(await dispatcher.handle(late)).toMatchObject({ id: late.id, ok: true, data: running("shop") });
    expect(restart).toHaveBeenCalledTimes(1);

    // Another key is another command.
    await dispatcher.handle(callOf("pod.restart", { name: "shop" }, { idempotencyKey: "restart-2" }));
    expect(restart).toHaveBeenCalledTimes(2);
  });

  it("keeps no large outcome for a re-sent key: the callers of the run get it whole, a later copy hears it ran", async () => {
    const big = { exitCode: 0, stdout: "x".repeat(1024 * 1024), stderr: "", durationMs: 1, timedOut: false };
    const gate = deferred<typeof big>();
    const exec = vi.fn(() => gate.promise);
    const dispatcher = new Dispatcher(handlers({ "pod.exec": exec }), quiet);
    const params = { name: "shop", command: ["cat", "big"], timeoutS: 5 };
    const first = callOf("pod.exec", params, { idempotencyKey: "exec-1" });
    const copy = callOf("pod.exec", params, { idempotencyKey: "exec-1" });
    const answers = [dispatcher.handle(first), dispatcher.handle(copy)];
    gate.resolve(big);
    for (const answer of await Promise.all(answers)) expect(answer).toMatchObject({ ok: true, data: big });

    const late = await dispatcher.handle(callOf("pod.exec", params, { idempotencyKey: "exec-1" }));
    expect(late).toMatchObject({
      ok: false,
      error: { code: "conflict", message: expect.stringContaining("already ran") },
    });
    expect(exec).toHaveBeenCalledTimes(1);

    // a small outcome is still kept whole
    const small = { ...big, stdout: "ok" };
    const execSmall = vi.fn(async () => small);
    const other = new Dispatcher(handlers({ "pod.exec": execSmall }), quiet);
    await other.handle(callOf("pod.exec", params, { idempotencyKey: "exec-2" }));
    expect(await other.handle(callOf("pod.exec", params, { idempotencyKey: "exec-2" }))).toMatchObject({
      ok: true,
      data: small,
    });
    expect(execSmall).toHaveBeenCalledTimes(1);
  });

  it("remembers a failure under its key too: a re-sent command that failed does not run again", async () => {
    const start = vi.fn(async () => {
      throw new AgentError("conflict", "port taken");
    });
    const dispatcher = new Dispatcher(handlers({ "pod.start": start }), quiet);
    const first = await dispatcher.handle(callOf("pod.start", { name: "shop" }, { idempotencyKey: "k" }));
    const again = await dispatcher.handle(callOf("pod.start", { name: "shop" }, { idempotencyKey: "k" }));
    expect(again).toMatchObject({ ok: false, error: { code: "conflict", message: "port taken" } });
    expect(first).toMatchObject({ ok: false, error: { code: "conflict" } });
    expect(start).toHaveBeenCalledTimes(1);
  });

  it("times a command out: the handler's signal is aborted and the answer is unavailable", async () => {
    let signal: AbortSignal | undefined;
    const dispatcher = new Dispatcher(
      handlers({
        // Cooperative: gives up when told.
        "pod.stop": (_params, ctx: HandlerContext) =>
          new Promise((_resolve, reject) => {
            signal = ctx.signal;
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
        // Stubborn: never settles; the answer must not wait for it.
        "pod.start": () => new Promise(() => {}),
      }),
      quiet,
    );
    const started = Date.now();
    const [stop, start] = await Promise.all([
      dispatcher.handle(callOf("pod.stop", { name: "shop" }, { timeoutMs: 50 })),
      dispatcher.handle(callOf("pod.start", { name: "cart" }, { timeoutMs: 50 })),
    ]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(signal?.aborted).toBe(true);
    // the host's own failure, naming the op and the time (the control plane adds the server's name)
    expect(stop).toMatchObject({
      ok: false,
      error: {
        code: "unavailable",
        message: "the agent did not finish pod.stop within 50 ms (host)",
        component: "host",
      },
    });
    expect(start).toMatchObject({
      ok: false,
      error: {
        code: "unavailable",
        message: "the agent did not finish pod.start within 50 ms (host)",
        component: "host",
      },
    });
  });

  it("passes AgentError codes through and turns anything else thrown into internal", async () => {
    const dispatcher = new Dispatcher(
      handlers({
        "pod.inspect": async () => {
          throw new AgentError("not_found", "pod shop has no container on this host");
        },
        "pod.delete": async () => {
          throw new TypeError("cannot read properties of undefined");
        },
        "pod.resize": async () => {
          throw "a string, not an Error";
        },
      }),
      quiet,
    );
    expect(await dispatcher.handle(callOf("pod.inspect", { name: "shop" }))).toMatchObject({
      ok: false,
      error: { code: "not_found", message: "pod shop has no container on this host" },
    });
    expect(await dispatcher.handle(callOf("pod.delete", { name: "shop" }))).toMatchObject({
      ok: false,
      error: { code: "internal", message: "cannot read properties of undefined" },
    });
    const limits = { cpu: 1, memoryMb: 512, diskGb: 5, pids: 256 };
    expect(await dispatcher.handle(callOf("pod.resize", { name: "shop", limits }))).toMatchObject({
      ok: false,
      error: { code: "internal", message: "a string, not an Error" },
    });
  });

  it("never answers an empty reason: a blank error names the op and the host instead", async () => {
    const dispatcher = new Dispatcher(
      handlers({
        "pod.inspect": async () => {
          throw new AgentError("conflict", "  ");
        },
        "pod.delete": async () => {
          throw new Error("");
        },
        "pod.stop": async () => {
          throw undefined;
        },
      }),
      quiet,
    );
    expect(await dispatcher.handle(callOf("pod.inspect", { name: "shop" }))).toMatchObject({
      ok: false,
      error: { code: "conflict", message: "pod.inspect failed on the host without a reason (host)" },
    });
    expect(await dispatcher.handle(callOf("pod.delete", { name: "shop" }))).toMatchObject({
      ok: false,
      error: {
        code: "internal",
        message: "pod.delete failed on the host without a reason (host)",
        component: "host",
      },
    });
    expect(await dispatcher.handle(callOf("pod.stop", { name: "shop" }))).toMatchObject({
      ok: false,
      error: { code: "internal", message: "pod.stop failed on the host without a reason (host)" },
    });
  });

  it("calls a pod busy while its command runs and for a grace period after, so its own events are not news", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const gate = deferred<PodState>();
    const dispatcher = new Dispatcher(
      handlers({ "pod.stop": () => gate.promise, "pod.clone": async ({ spec }) => running(spec.name) }),
      quiet,
    );
    expect(dispatcher.isBusy("shop")).toBe(false);
    const stop = dispatcher.handle(callOf("pod.stop", { name: "shop" }));
    await Promise.resolve();
    expect(dispatcher.isBusy("shop")).toBe(true);
    expect(dispatcher.isBusy("cart")).toBe(false);

    gate.resolve(running("shop"));
    await stop;
    expect(dispatcher.isBusy("shop")).toBe(true);
    vi.setSystemTime(Date.now() + 2_000);
    expect(dispatcher.isBusy("shop")).toBe(true);
    vi.setSystemTime(Date.now() + 1_500);
    expect(dispatcher.isBusy("shop")).toBe(false);

    // A clone is about the new pod it makes.
    const spec = {
      podId: "pod_2",
      name: "shop-copy",
      preset: "static",
      port: 8080,
      domain: "shop-copy.pods.localhost",
      sshPort: 2202,
      limits: { cpu: 1, memoryMb: 512, diskGb: 5, pids: 256 },
    };
    await dispatcher.handle(callOf("pod.clone", { source: "shop", spec }));
    expect(dispatcher.isBusy("shop-copy")).toBe(true);
  });

  it("drain waits for in-flight work, refuses new work meanwhile, and answers unavailable after", async () => {
    const gate = deferred<PodState>();
    const stop = vi.fn(() => gate.promise);
    const ping = vi.fn(async () => ({ pong: true as const }));
    const dispatcher = new Dispatcher(handlers({ "pod.stop": stop, "host.ping": ping }), quiet);
    const inFlight = dispatcher.handle(callOf("pod.stop", { name: "shop" }));
    await Promise.resolve();

    const drained = dispatcher.drain(5_000);
    expect(await isPending(drained)).toBe(true);
    expect(await dispatcher.handle(callOf("host.ping", {}))).toMatchObject({
      ok: false,
      error: { code: "unavailable" },
    });
    expect(ping).not.toHaveBeenCalled();

    gate.resolve(running("shop"));
    await drained;
    expect(await inFlight).toMatchObject({ ok: true, data: running("shop") });
    expect(await dispatcher.handle(callOf("host.ping", {}))).toMatchObject({
      ok: false,
      error: {
        code: "unavailable",
        message: "the agent is shutting down; host.ping was not started (host)",
        component: "host",
      },
    });
    expect(ping).not.toHaveBeenCalled();
  });

  it("drain is bounded: past its timeout the stragglers are aborted and answered unavailable", async () => {
    let signal: AbortSignal | undefined;
    const dispatcher = new Dispatcher(
      handlers({
        "pod.stop": (_params, ctx) =>
          new Promise((_resolve, reject) => {
            signal = ctx.signal;
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
      }),
      quiet,
    );
    const straggler = dispatcher.handle(callOf("pod.stop", { name: "shop" }, { timeoutMs: 60_000 }));
    const started = Date.now();
    await dispatcher.drain(50);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(signal?.aborted).toBe(true);
    expect(await straggler).toMatchObject({
      ok: false,
      error: {
        code: "unavailable",
        message: "the agent shut down during pod.stop (host)",
        component: "host",
      },
    });
  });
});

describe("backoffDelay", () => {
  it("grows exponentially from the base, with full jitter in the upper half of the step", () => {
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(30_000, 500 * 2 ** attempt);
      expect(backoffDelay(attempt, 500, 30_000, () => 0)).toBe(ceiling / 2);
      expect(backoffDelay(attempt, 500, 30_000, () => 0.999_999)).toBe(ceiling);
    }
    expect(backoffDelay(0, 500, 30_000, () => 0.5)).toBe(375);
  });

  it("never exceeds the cap, even after very many attempts, and stays a whole number of ms", () => {
    for (const attempt of [6, 7, 20, 100, 5_000]) {
      for (let i = 0; i < 50; i++) {
        const delay = backoffDelay(attempt);
        expect(delay).toBeGreaterThanOrEqual(15_000);
        expect(delay).toBeLessThanOrEqual(30_000);
        expect(Number.isInteger(delay)).toBe(true);
      }
    }
  });

  it("spreads a fleet's reconnects: the same attempt gives different delays", () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(3)));
    expect(delays.size).toBeGreaterThan(10);
    for (const d of delays) expect(d >= 2_000 && d <= 4_000).toBe(true);
  });
});
