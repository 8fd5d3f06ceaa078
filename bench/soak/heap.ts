/**
 * JS heaps of workerd's isolates, read through the DevTools inspector (the Chrome DevTools Protocol
 * over a WebSocket; the stack started with `inspector: true`). The Worker's isolate holds what is
 * ours (module state, Durable Objects' in-memory state, caches); workerd's other isolates are the
 * local runtime's own JS (the D1, R2, KV and cache simulators, the Workflows engines); the rest of
 * workerd's RSS is its native memory (SQLite page caches of the local storage, its allocator). Only
 * the first says anything about production.
 */
import { writeFile } from "node:fs/promises";
import WebSocket from "ws";

export interface HeapSession {
  /**
   * Used JS heap in bytes after a full garbage collection: what is still reachable. workerd's
   * inspector leaves `HeapProfiler.collectGarbage` unanswered; a heap snapshot collects garbage first,
   * so one is taken (a pause of ~1 s per 40 MB of heap) and, given `file`, written there
   * (`.heapsnapshot`, for bench/soak/heap-diff.ts or Chrome's DevTools).
   */
  usedAfterGc(file?: string): Promise<number>;
  close(): void;
}

interface Target {
  id?: string;
  webSocketDebuggerUrl?: string;
}

const CALL_TIMEOUT_MS = 60_000;

async function connect(wsUrl: string): Promise<HeapSession> {
  const ws = new WebSocket(wsUrl);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", (req, res) => {
      req.destroy();
      reject(new Error(`${wsUrl}: HTTP ${res.statusCode}`));
    });
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  let chunks: string[] | undefined;
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: { chunk?: string };
    };
    if (msg.method === "HeapProfiler.addHeapSnapshotChunk") {
      chunks?.push(msg.params?.chunk ?? "");
      return;
    }
    const call = msg.id === undefined ? undefined : pending.get(msg.id);
    if (!call || msg.id === undefined) return;
    pending.delete(msg.id);
    if (msg.error) call.reject(new Error(msg.error.message));
    else call.resolve(msg.result);
  });
  ws.on("close", () => {
    for (const call of pending.values()) call.reject(new Error("inspector closed"));
    pending.clear();
  });
  const send = <T>(method: string, params: object = {}): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${method}: no answer in ${CALL_TIMEOUT_MS / 1000} s`));
      }, CALL_TIMEOUT_MS);
      pending.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async usedAfterGc(file) {
      chunks = file ? [] : undefined;
      await send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      const text = chunks?.join("");
      chunks = undefined;
      if (file && text !== undefined) await writeFile(file, text);
      return (await send<{ usedSize: number }>("Runtime.getHeapUsage")).usedSize;
    },
    close: () => ws.close(),
  };
}

async function targets(inspectorUrl: string): Promise<Target[]> {
  return (await (await fetch(`${inspectorUrl}/json`)).json()) as Target[];
}

/** The Worker's isolate, through wrangler's inspector (LocalWorker.inspectorUrl): one session held open. */
export async function openWorkerHeap(inspectorUrl: string): Promise<HeapSession> {
  const target = (await targets(inspectorUrl)).find((t) => t.webSocketDebuggerUrl);
  if (!target?.webSocketDebuggerUrl) throw new Error(`no inspector target at ${inspectorUrl}/json`);
  return connect(target.webSocketDebuggerUrl);
}

/**
 * The local runtime's own isolates (LocalWorker.runtimeInspectorUrl: every one but the Worker's
 * `core:user:…`, whose one session wrangler's inspector holds): per isolate its used heap after a
 * garbage collection, in bytes; NaN for one that did not answer.
 */
export async function runtimeHeaps(runtimeInspectorUrl: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const t of await targets(runtimeInspectorUrl)) {
    if (!t.id || !t.webSocketDebuggerUrl || t.id.startsWith("core:user:")) continue;
    const session = await connect(t.webSocketDebuggerUrl).catch(() => undefined);
    out.set(t.id, session ? await session.usedAfterGc().catch(() => Number.NaN) : Number.NaN);
    session?.close();
  }
  return out;
}
