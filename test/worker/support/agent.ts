import { env, exports } from "cloudflare:workers";
import type { Component, ErrorCode } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import {
  AGENT_TOKEN_PREFIX,
  type ControlMessage,
  type PodState,
  PROTOCOL_VERSION,
} from "../../../shared/protocol";

/**
 * Plays a host agent from inside workerd: a host row straight in D1, then the agent's side of the
 * WebSocket that `GET /agent/connect` hands to the host's HostAgent Durable Object.
 */

export interface TestHost {
  id: string;
  name: string;
  region: string;
  token: string;
}

const sha256Hex = async (text: string) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

/** A registered host (offline, no agent yet), shaped like `npm run host:add` makes it. */
export async function insertHost(region = "eu-west"): Promise<TestHost> {
  const id = newId("host");
  const name = `test-${id.slice(5, 17)}`;
  const token = `${AGENT_TOKEN_PREFIX}${newId("t").slice(2)}${newId("t").slice(2)}`;
  await env.DB.prepare(
    `INSERT INTO hosts (id, name, region, ssh_host, ssh_port_min, ssh_port_max, cpu, memory_mb, disk_gb,
       agent_token_hash, created_at) VALUES (?, ?, ?, 'ssh.example.test', 2200, 2299, 8, 16384, 200, ?, ?)`,
  )
    .bind(id, name, region, await sha256Hex(token), new Date().toISOString())
    .run();
  return { id, name, region, token };
}

let podCounter = 0;
/** A pod name no other test (nor test file) uses. */
export const uniquePodName = () => `p${newId("x").slice(2, 12)}${++podCounter}`;

export interface TestPod {
  id: string;
  name: string;
}

/** A pod row placed on `hostId`, as the create flow leaves it. */
export async function insertPod(options: {
  hostId: string | null;
  teamId?: string;
  status?: string;
  name?: string;
  ip?: string | null;
}): Promise<TestPod> {
  const id = newId("pod");
  const name = options.name ?? uniquePodName();
  const now = new Date().toISOString();
  await env.DB.prepare(
    `INSERT INTO pods (id, name, team_id, preset, status, plan_slug, region, host_id, ssh_port, ip, created_at, updated_at)
     VALUES (?, ?, ?, 'static', ?, 'launch', 'eu-west', ?, NULL, ?, ?, ?)`,
  )
    .bind(
      id,
      name,
      options.teamId ?? newId("team"),
      options.status ?? "running",
      options.hostId,
      options.ip === undefined ? "10.0.0.2" : options.ip,
      now,
      now,
    )
    .run();
  return { id, name };
}

export interface HostRecord {
  status: string;
  agent_version: string | null;
  last_seen_at: string | null;
}

export const hostRecord = async (id: string) =>
  env.DB.prepare("SELECT status, agent_version, last_seen_at FROM hosts WHERE id = ?")
    .bind(id)
    .first<HostRecord>();

export const podRecord = async (id: string) =>
  env.DB.prepare("SELECT status, ip, updated_at FROM pods WHERE id = ?")
    .bind(id)
    .first<{ status: string; ip: string | null; updated_at: string }>();

export const podEventRecords = async (podId: string) =>
  (
    await env.DB.prepare(
      "SELECT type, message, metadata FROM pod_events WHERE pod_id = ? ORDER BY created_at, rowid",
    )
      .bind(podId)
      .all<{ type: string; message: string; metadata: string | null }>()
  ).results;

/** `GET /agent/connect` as an agent dials it. */
export const dial = (token?: string, headers: Record<string, string> = { upgrade: "websocket" }) =>
  exports.default.fetch(
    new Request("http://localhost/agent/connect", {
      headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }),
  );

/** Polls `probe` until it returns something truthy (D1 writes the DO makes have no reply to wait on). */
export async function until<T>(
  probe: () => Promise<T>,
  what: string,
  timeoutMs = 3_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

type ControlType = ControlMessage["type"];
type ControlOf<T extends ControlType> = Extract<ControlMessage, { type: T }>;
export type ControlCall = ControlOf<"control:call">;

/** The agent's end of the socket: a queue of what the control plane sent, and the agent's replies. */
export class FakeAgent {
  private static readonly open = new Set<FakeAgent>();
  private readonly inbox: ControlMessage[] = [];
  private readonly waiters = new Set<() => void>();
  /**
   * The reconciler's pass that every hello starts (`host.reconcile`) is answered at once with "no
   * drift" and kept out of the queue, so a test's `next("control:call")` is its own command; a
   * test of the reconciler sets this false and answers it itself.
   */
  answerReconcile = true;
  /** resolves with the close code once the control plane closes the socket (or it errors) */
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as ControlMessage;
      if (this.answerReconcile && message.type === "control:call" && message.op === "host.reconcile") {
        this.ok(message, { findings: [], missing: [] });
        return;
      }
      this.inbox.push(message);
      for (const wake of this.waiters) wake();
    });
    this.closed = new Promise((resolve) => {
      ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
      ws.addEventListener("error", () => resolve({ code: 1006, reason: "error" }));
    });
    ws.accept();
    FakeAgent.open.add(this);
    void this.closed.then(() => FakeAgent.open.delete(this));
  }

  /** Hangs up every agent a test left connected (for `afterEach`). */
  static closeAll(): void {
    for (const agent of FakeAgent.open) agent.close();
  }

  static async connect(token: string): Promise<FakeAgent> {
    const res = await dial(token);
    if (res.status !== 101 || !res.webSocket) throw new Error(`agent connect failed: ${res.status}`);
    return new FakeAgent(res.webSocket);
  }

  /** Connects and says hello with `inventory`; returns the welcome. */
  static async online(host: TestHost, inventory: PodState[] = [], agentVersion?: string) {
    const agent = await FakeAgent.connect(host.token);
    const welcome = await agent.hello(inventory, agentVersion);
    return { agent, welcome };
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  async hello(inventory: PodState[], agentVersion = "0.0.0-test"): Promise<ControlOf<"control:welcome">> {
    this.send({ type: "agent:hello", protocol: PROTOCOL_VERSION, agentVersion, inventory });
    return this.next("control:welcome");
  }

  /** The next message of `type` (others are left in the queue). */
  async next<T extends ControlType>(type: T, timeoutMs = 3_000): Promise<ControlOf<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.inbox.findIndex((m) => m.type === type);
      if (index >= 0) return this.inbox.splice(index, 1)[0] as ControlOf<T>;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  /** Fails unless nothing of `type` arrives within `ms`. */
  async expectNone(type: ControlType, ms = 200): Promise<void> {
    const got = await this.next(type, ms).catch(() => undefined);
    if (got) throw new Error(`expected no ${type}, got ${JSON.stringify(got)}`);
  }

  ok(call: { id: string }, data: unknown): void {
    this.send({ type: "agent:result", id: call.id, ok: true, data });
  }

  fail(call: { id: string }, code: ErrorCode, message = `${code} on the host`, component?: Component): void {
    this.send({
      type: "agent:result",
      id: call.id,
      ok: false,
      error: { code, message, ...(component ? { component } : {}) },
    });
  }

  podStatus(pod: PodState, reason?: string): void {
    this.send({ type: "agent:pod-status", pod, ...(reason ? { reason } : {}) });
  }

  close(code = 1000, reason = "test agent closing"): void {
    FakeAgent.open.delete(this);
    try {
      this.ws.close(code, reason);
    } catch {
      // already closed
    }
  }
}

/**
 * A request a host agent makes over HTTP with its token (the byte routes: `/agent/blobs`,
 * `/agent/backups`), through the Worker's real fetch handler.
 */
export const hostFetch = (
  host: Pick<TestHost, "token">,
  method: string,
  path: string,
  body?: BodyInit | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
) =>
  exports.default.fetch(
    new Request(`http://localhost${path}`, {
      method,
      headers: { authorization: `Bearer ${host.token}`, ...headers },
      body,
    }),
  );

/**
 * What a real agent does for a backup's bytes: `backup.create` streams the archive to
 * `PUT /agent/backups/{id}`; `backup.verify` and `backup.restore` read it back with GET.
 */
export const putBackupArchive = (host: Pick<TestHost, "token">, backupId: string, bytes: Uint8Array) =>
  hostFetch(host, "PUT", `/agent/backups/${backupId}`, bytes);

export async function getBackupArchive(host: Pick<TestHost, "token">, backupId: string) {
  const res = await hostFetch(host, "GET", `/agent/backups/${backupId}`);
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), headers: res.headers };
}
