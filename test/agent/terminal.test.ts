import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";
import { AgentError } from "../../agent/errors";
import { createLogger } from "../../agent/logger";
import type { PodProcess, PodProcessLauncher } from "../../agent/ssh/pod-process";
import { pump } from "../../agent/ssh/streams";
import { TerminalLimits } from "../../agent/terminal/limits";
import { openTerminal } from "../../agent/terminal/session";
import { TERMINAL_WINDOW_BYTES } from "../../shared/protocol/terminal";

/**
 * The agent's side of a web terminal session (agent/terminal/), without Docker: a process that
 * writes like `yes` as fast as it is read, and a local WebSocket server standing in for the relay.
 * What is checked is what the host must guarantee whatever the browser does: output stops at the
 * window until acknowledged (the process is no longer read), keystrokes are acknowledged as taken,
 * an idle session ends, and the session caps.
 */

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

/** A process whose output is endless "y\n" (counted as it is read) and whose input is recorded. */
function yesProcess() {
  let produced = 0;
  const line = Buffer.from("y\n".repeat(2048));
  const source = new Readable({
    read() {
      produced += line.length;
      this.push(line);
    },
  });
  const input: Buffer[] = [];
  let hungUp = false;
  const proc: PodProcess = {
    tty: true,
    pipeOutput(stdout, _stderr, onData) {
      pump(source, stdout, onData, false);
      return new Promise((resolve) => source.once("close", () => resolve()));
    },
    pipeInput(from, onData) {
      from.on("data", (chunk: Buffer) => {
        onData();
        input.push(chunk);
      });
    },
    async resize() {},
    async signal() {
      return true;
    },
    async exitCode() {
      return 0;
    },
    hangUp() {
      hungUp = true;
      source.destroy();
    },
  };
  return { proc, produced: () => produced, input, hungUp: () => hungUp };
}

/** A relay stand-in: the agent's socket as the test sees it. */
async function relay() {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  servers.push(server);
  await new Promise((r) => server.once("listening", r));
  const socket = new Promise<WebSocket>((resolve) => server.once("connection", (ws) => resolve(ws)));
  const { port } = server.address() as AddressInfo;
  return { apiUrl: `http://127.0.0.1:${port}`, socket };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function session(idleMs = 60_000) {
  const yes = yesProcess();
  const { apiUrl, socket } = await relay();
  let ended = false;
  await openTerminal(
    {
      processes: { start: async () => yes.proc } as unknown as PodProcessLauncher,
      apiUrl,
      agentToken: "t",
      idleMs,
      log: createLogger({ component: "test" }),
    },
    { pod: "p1", container: "c1", relay: "h/1", cols: 80, rows: 24 },
    () => {
      ended = true;
    },
  );
  const ws = await socket;
  let received = 0;
  const texts: unknown[] = [];
  ws.on("message", (data, binary) => {
    if (binary) received += (data as Buffer).length;
    else texts.push(JSON.parse(data.toString()));
  });
  return { yes, ws, received: () => received, texts, ended: () => ended };
}

describe("a web terminal session on the host", () => {
  it("stops sending at the window until the browser acknowledges, and stops reading the process", async () => {
    const s = await session();
    await sleep(300);
    const first = s.received();
    expect(first).toBeGreaterThanOrEqual(TERMINAL_WINDOW_BYTES);
    expect(first).toBeLessThan(TERMINAL_WINDOW_BYTES + 64 * 1024);
    // what was read from the process is bounded too (the pipe's own buffer, 1 MiB, past the window)
    const read = s.yes.produced();
    await sleep(300);
    expect(s.received()).toBe(first);
    expect(s.yes.produced()).toBe(read);
    expect(read).toBeLessThan(TERMINAL_WINDOW_BYTES + 2 * 1024 * 1024);

    s.ws.send(JSON.stringify({ type: "ack", bytes: first }));
    await sleep(300);
    expect(s.received()).toBeGreaterThanOrEqual(first + TERMINAL_WINDOW_BYTES);
    s.ws.close();
    await expect.poll(() => s.ended() && s.yes.hungUp()).toBe(true);
  });

  it("passes keystrokes to the process and acknowledges them to the relay", async () => {
    const s = await session();
    s.ws.send(Buffer.from("echo hi\r"), { binary: true });
    await expect.poll(() => Buffer.concat(s.yes.input).toString()).toBe("echo hi\r");
    await expect.poll(() => s.texts).toContainEqual({ type: "input-ack", bytes: 8 });
    s.ws.close();
  });

  it("ends an idle session with 4408 and says why", async () => {
    const s = await session(300);
    // output flows only until the window is full; then nothing moves either way
    const closed = new Promise<number>((r) => s.ws.once("close", (code) => r(code)));
    expect(await closed).toBe(4408);
    expect(s.texts).toContainEqual({ type: "error", status: 408, error: expect.stringContaining("idle") });
    expect(s.yes.hungUp()).toBe(true);
  });

  it("ends the session on an unreadable control message", async () => {
    const s = await session();
    const closed = new Promise<number>((r) => s.ws.once("close", (code) => r(code)));
    s.ws.send(JSON.stringify({ type: "resize", cols: 0, rows: 0 }));
    expect(await closed).toBe(4400);
  });
});

describe("terminal sessions per pod and per team", () => {
  it("refuses past the pod's and the team's caps, and counts a closed session out", () => {
    const limits = new TerminalLimits(2, 3);
    const a1 = limits.enter("a", "t");
    limits.enter("a", "t");
    expect(() => limits.enter("a", "t")).toThrow(AgentError);
    expect(() => limits.enter("a", "t")).toThrow(/pod a already has 2 terminal sessions/);
    limits.enter("b", "t");
    expect(() => limits.enter("c", "t")).toThrow(/team already has 3/);
    expect(() => limits.enter("c", "other")).not.toThrow();
    a1();
    a1(); // leaving twice gives back one place
    expect(() => limits.enter("c", "t")).not.toThrow();
    expect(() => limits.enter("d", "t")).toThrow(/team already has 3/);
  });
});
