import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, type Reply, signUp } from "../e2e/support/api";
import { waitForHostOnline } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { type FlappingProxy, startFlappingProxy } from "./flapping-proxy";
import { agentLines, dockerObjects, podSh, within } from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * The control socket flaps (issue 28 item 3, docs/reliability.md): a proxy the test owns sits between
 * the agent and the Worker and cuts every connection every 2–6 s, the agent↔HostAgent WebSocket and
 * the agent's HTTP calls alike, while three tenants run at least 200 mixed operations (more until it
 * was cut 10 times) through the public API:
 * pod create, file writes, exec, env set, stop/start, backups, delete. Then:
 * - each operation ended: its final state reached (a create `running`, a backup `completed` or
 *   `failed` with its reason), or a clear error (a 4xx/503 with a message, never a 500 or a hang);
 * - none ran twice: every exec's line is in the pod's log at most once (once if it answered 200), one
 *   `created` event and one container per pod, no more `started`/`stopped` events than starts and
 *   stops asked for, each backup listed once;
 * - none was lost: every write that answered 200 is there with its content, every env var set with a
 *   200 is in the pod's .env.
 */
const TENANTS = 3;
const PODS_PER_TENANT = 2;
const OPERATIONS = 200;
/** the cuts the operations must live through: they go on past 200 until the socket was cut this often */
const CUTS = 10;
/** how long one request may take before it counts as hanging */
const REQUEST_MS = 90_000;
/** how long an accepted create, backup or delete may take to reach its final state */
const ENDS_WITHIN_MS = 180_000;
const APP = "/home/pod_user/app";

type Kind = "create" | "write" | "exec" | "env" | "stop" | "start" | "backup" | "backup-delete" | "delete";

interface PodBook {
  name: string;
  owner: User;
  created: boolean;
  /** the last state a 200 told */
  running: boolean;
  writes: Map<string, string>;
  execOk: Set<string>;
  execSent: Set<string>;
  envOk: Map<string, string>;
  backupIds: string[];
  deletedBackups: Set<string>;
  startsAsked: number;
  stopsAsked: number;
}

interface Done {
  kind: Kind;
  pod: string;
  status: number;
  /** the final state reached, or the clear error it ended with */
  outcome: string;
  ms: number;
}

describe("chaos: the control socket flaps during 200 mixed operations", () => {
  let stack: Stack;
  let proxy: FlappingProxy;
  const done: Done[] = [];
  const books: PodBook[] = [];
  const backupLines: string[] = [];

  beforeAll(async () => {
    stack = await startStack("flap", { direct: true });
    const upstream = new URL(stack.api);
    proxy = await startFlappingProxy({ host: upstream.hostname, port: Number(upstream.port) });
    // the agent reaches the Worker only through the proxy (its HTTP calls too)
    await stack.agent.stop();
    stack.agentEnv.PODHOST_API_URL = proxy.url;
    const agent = await stack.startAgent();
    // the agent's lines about backups, all of them (its own buffer keeps only the latest output)
    agent.child.stdout?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n"))
        if (line.includes("bk_") && backupLines.length < 5_000) backupLines.push(line);
    });
  }, 300_000);

  afterAll(async () => {
    proxy?.calm();
    await stack?.stop();
    await proxy?.close();
  });

  afterEach((ctx) => {
    if (ctx.task.result?.state !== "fail" || !stack) return;
    const lines = agentLines(stack.agent).filter((l) =>
      /control plane|command failed|backup/.test(String(l.msg)),
    );
    console.error(
      lines
        .slice(-80)
        .map((l) => JSON.stringify(l))
        .join("\n"),
    );
    console.error(JSON.stringify(summary(done)));
  });

  it("each ends, none runs twice, none is lost", { timeout: 1_500_000 }, async () => {
    const started = Date.now();
    const tenants: User[] = [];
    for (let t = 0; t < TENANTS; t++) tenants.push(await signUp(stack.api, `Flap ${t}`));
    for (const t of tenants) await waitForHostOnline(t.api);
    const tag = stack.prefix.slice(-4);
    for (const [t, owner] of tenants.entries())
      for (let p = 0; p < PODS_PER_TENANT; p++) books.push(newBook(`flap-${tag}-${t}${p}`, owner));

    proxy.flap(2_000, 6_000);
    // one worker per tenant, each over its own pods: creates first, then mixed operations until
    // only the deletes (one per pod) are left of the 200 and the socket was cut CUTS times (the
    // operations once took longer than CUTS cuts; faster, 200 of them may end within a few)
    const budget = OPERATIONS - books.length;
    await Promise.all(
      tenants.map(async (owner) => {
        const mine = books.filter((b) => b.owner === owner);
        for (const book of mine) await createPod(book);
        let n = 0;
        while (done.length < budget || proxy.cuts < CUTS) {
          const book = mine[n++ % mine.length];
          if (book) await mixed(book, n);
        }
      }),
    );
    // the deletes, still flapping (the last operations, one per pod)
    const deletable = books.filter((b) => b.created);
    await Promise.all(deletable.map((b) => verifyThenDelete(b)));
    proxy.calm();

    const counts = summary(done);
    console.log(
      JSON.stringify({
        seconds: Math.round((Date.now() - started) / 1000),
        operations: done.length,
        cuts: proxy.cuts,
        connectionsCut: proxy.connectionsCut,
        agentReconnects: agentLines(stack.agent).filter((l) => l.msg === "connected to control plane").length,
        ...counts,
      }),
    );
    // It flapped: the socket was cut often, and the agent came back each time.
    expect(proxy.cuts).toBeGreaterThanOrEqual(CUTS);
    expect(done.length).toBeGreaterThanOrEqual(OPERATIONS);
    // Each ended: a final state, or a clear error (no 500, every error with its reason).
    for (const d of done) {
      expect(d.status, JSON.stringify(d)).not.toBe(500);
      expect(d.outcome, JSON.stringify(d)).not.toBe("");
    }
    expect(books.every((b) => b.created)).toBe(true);
    // Each kind of operation got through at times (else "none was lost" would hold of nothing).
    for (const kind of ["create", "write", "exec", "env", "stop", "start", "backup", "delete"])
      expect(counts[kind]?.ok ?? 0, `${kind}: ${JSON.stringify(counts[kind])}`).toBeGreaterThan(0);
  });

  function newBook(name: string, owner: User): PodBook {
    return {
      name,
      owner,
      created: false,
      running: false,
      writes: new Map(),
      execOk: new Set(),
      execSent: new Set(),
      envOk: new Map(),
      backupIds: [],
      deletedBackups: new Set(),
      startsAsked: 0,
      stopsAsked: 0,
    };
  }

  /** One request, bounded, its answer kept: a 2xx, or an error that must carry its reason. */
  async function op(
    kind: Kind,
    book: PodBook,
    call: (api: ApiClient) => Promise<Reply>,
  ): Promise<Reply & { record: Done }> {
    const t0 = Date.now();
    const res = await Promise.race([
      call(book.owner.api),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`${kind} on ${book.name} did not answer in ${REQUEST_MS} ms`)),
          REQUEST_MS,
        ),
      ),
    ]);
    const ok = res.status >= 200 && res.status < 300;
    const error = ok ? "" : typeof res.body?.error === "string" ? res.body.error : "";
    // A failure is a 4xx or a 503 with a message: never a 500, never a bare status.
    if (!ok) {
      expect(
        [400, 403, 404, 409, 429, 503],
        `${kind} ${book.name}: ${res.status} ${JSON.stringify(res.body)}`,
      ).toContain(res.status);
      expect(error, `${kind} ${book.name}: ${JSON.stringify(res.body)}`).not.toBe("");
    }
    const record = {
      kind,
      pod: book.name,
      status: res.status,
      outcome: ok ? "ok" : error,
      ms: Date.now() - t0,
    };
    done.push(record);
    return { ...res, record };
  }

  /** The pod's final state as the API tells it (the host asked live). */
  const podStatus = async (book: PodBook) =>
    (await book.owner.api.get(`/api/pods/${book.name}`)).body?.status;

  async function createPod(book: PodBook) {
    for (let attempt = 0; attempt < 5 && !book.created; attempt++) {
      const res = await op("create", book, (api) =>
        api.post("/api/pods", { name: book.name, preset: "static", plan_slug: "build" }),
      );
      if (res.status !== 202) {
        // the host was away at that moment (a clear 503): ask again
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      const final = await waitFor(
        `${book.name} to end its create`,
        async () => {
          const status = await podStatus(book);
          return status === "running" || status === "error" ? status : undefined;
        },
        ENDS_WITHIN_MS,
      );
      const events =
        final === "running" ? [] : (await book.owner.api.get(`/api/pods/${book.name}/events`)).body;
      expect(final, `${book.name} ended its create ${final}: ${JSON.stringify(events)}`).toBe("running");
      book.created = true;
      book.running = true;
      res.record.outcome = final;
    }
  }

  async function mixed(book: PodBook, n: number) {
    if (!book.created) return createPod(book);
    if (!book.running) return power(book, "start");
    const roll = n % 20;
    if (roll < 6) return exec(book, n);
    if (roll < 11) return write(book, n);
    if (roll < 14) return env(book, n);
    if (roll < 17) return power(book, "stop");
    return backup(book);
  }

  async function exec(book: PodBook, n: number) {
    const id = `x${n}-${Math.random().toString(36).slice(2, 8)}`;
    book.execSent.add(id);
    const res = await op("exec", book, (api) =>
      api.post(`/api/pods/${book.name}/exec`, { command: ["sh", "-c", `echo ${id} >> ~/app/exec.log`] }),
    );
    if (res.status === 200) {
      expect(res.body.exit_code, JSON.stringify(res.body)).toBe(0);
      book.execOk.add(id);
    }
  }

  async function write(book: PodBook, n: number) {
    const path = `${APP}/w/${n}.txt`;
    const content = `write ${n} of ${book.name} ${Math.random()}`;
    const res = await op("write", book, (api) =>
      api.put(`/api/pods/${book.name}/files/content`, { path, content }),
    );
    if (res.status === 200) book.writes.set(path, content);
  }

  async function env(book: PodBook, n: number) {
    const key = `FLAP_${n}`;
    const value = `v${n}`;
    const res = await op("env", book, (api) =>
      api.put(`/api/pods/${book.name}/env`, { vars: { [key]: value } }),
    );
    if (res.status === 200) book.envOk.set(key, value);
  }

  async function power(book: PodBook, action: "start" | "stop") {
    if (action === "start") book.startsAsked++;
    else book.stopsAsked++;
    const res = await op(action, book, (api) => api.post(`/api/pods/${book.name}/${action}`));
    if (res.status === 200) {
      book.running = res.body.status === "running";
      res.record.outcome = res.body.status;
      expect(res.body.status).toBe(action === "start" ? "running" : "stopped");
    } else {
      // outcome unknown to the caller: the host's state is the truth
      book.running = (await podStatus(book)) === "running";
    }
  }

  async function backup(book: PodBook) {
    const live = book.backupIds.filter((id) => !book.deletedBackups.has(id));
    if (live.length >= 4) {
      const oldest = live[0] ?? "";
      const res = await op("backup-delete", book, (api) =>
        api.delete(`/api/pods/${book.name}/backups/${oldest}`),
      );
      if (res.status === 200 || res.status === 404) book.deletedBackups.add(oldest);
      return;
    }
    const res = await op("backup", book, (api) => api.post(`/api/pods/${book.name}/backups`, {}));
    if (res.status !== 202) return;
    const id = res.body.id as string;
    book.backupIds.push(id);
    // each poll bounded: one request that hangs on a loaded machine fails that poll, not the wait
    let last: unknown;
    const settled = await waitFor(
      `backup ${id} to settle`,
      async () => {
        const got = await within(book.owner.api.get(`/api/pods/${book.name}/backups/${id}`));
        last = got.body;
        return got.body?.status && got.body.status !== "in_progress" ? got.body : undefined;
      },
      ENDS_WITHIN_MS,
    ).catch((error: unknown) => {
      const lines = backupLines.filter((l) => l.includes(id));
      throw new Error(`${String(error)}; last seen ${JSON.stringify(last)}; the agent:\n${lines.join("\n")}`);
    });
    res.record.outcome = settled.status === "completed" ? "completed" : `failed: ${settled.error ?? ""}`;
    if (settled.status !== "completed")
      expect(String(settled.error ?? ""), JSON.stringify(settled)).not.toBe("");
  }

  /** At most once and nothing lost, read back while it still flaps; then the pod's delete. */
  async function verifyThenDelete(book: PodBook) {
    const { api } = book.owner;
    for (let attempt = 0; attempt < 5 && !book.running; attempt++) await power(book, "start");
    expect(book.running, `${book.name}: started again`).toBe(true);
    // reads are retried: a cut may catch one
    const sh = (script: string) =>
      waitFor(`${book.name}: ${script}`, () => podSh(api, book.name, script), 60_000);
    // exec: each 200 once, nothing twice, nothing unknown
    const lines = (await sh("cat ~/app/exec.log 2>/dev/null || true")).split("\n").filter(Boolean);
    const seen = new Map<string, number>();
    for (const l of lines) seen.set(l, (seen.get(l) ?? 0) + 1);
    for (const [id, times] of seen) {
      expect(times, `${book.name}: exec ${id} ran ${times} times`).toBe(1);
      expect(book.execSent.has(id), `${book.name}: exec ${id} never sent`).toBe(true);
    }
    for (const id of book.execOk) expect(seen.get(id), `${book.name}: exec ${id} answered 200, ran`).toBe(1);
    // writes: each 200 there with its content
    for (const [path, content] of book.writes) {
      const got = await waitFor(`${book.name}: read ${path}`, async () => {
        const res = await api.get(`/api/pods/${book.name}/files/content?path=${encodeURIComponent(path)}`);
        if (res.status === 404) return null;
        return res.status === 200 ? (res.body.content as string) : undefined;
      });
      expect(got, `${book.name}: ${path}`).toBe(content);
    }
    // env: each 200 there
    const envNow = await waitFor(`${book.name}: env`, async () => {
      const res = await api.get(`/api/pods/${book.name}/env`);
      return res.status === 200 ? (res.body.vars as Record<string, string>) : undefined;
    });
    for (const [key, value] of book.envOk) expect(envNow[key], `${book.name}: env ${key}`).toBe(value);
    // one create, no start or stop ran twice
    const events = await waitFor(`${book.name}: events`, async () => {
      const res = await api.get(`/api/pods/${book.name}/events?limit=200`);
      return res.status === 200 ? (res.body.events as { type: string }[]) : undefined;
    });
    const count = (type: string) => events.filter((e) => e.type === type).length;
    expect(count("created"), `${book.name}: created events`).toBe(1);
    expect(count("started"), `${book.name}: started events`).toBeLessThanOrEqual(1 + book.startsAsked);
    expect(count("stopped"), `${book.name}: stopped events`).toBeLessThanOrEqual(book.stopsAsked);
    // one container for the pod, no helper left
    const containers = (await dockerObjects(stack.prefix)).containers.filter(
      (c) => c === `${stack.prefix}-${book.name}` || c.startsWith(`${stack.prefix}-${book.name}-`),
    );
    expect(containers, `${book.name}: its containers`).toEqual([`${stack.prefix}-${book.name}`]);
    // each backup listed once, settled
    const list = await waitFor(`${book.name}: backups`, async () => {
      const res = await api.get(`/api/pods/${book.name}/backups`);
      return res.status === 200 ? (res.body.backups as { id: string; status: string }[]) : undefined;
    });
    const ids = list.map((b) => b.id);
    expect(new Set(ids).size, `${book.name}: backups listed once`).toBe(ids.length);
    for (const id of book.backupIds.filter((i) => !book.deletedBackups.has(i)))
      expect(
        ids.filter((i) => i === id),
        `${book.name}: backup ${id}`,
      ).toHaveLength(1);

    // the delete: the last operation on the pod
    let deleted: Done | undefined;
    for (let attempt = 0; attempt < 10; attempt++) {
      const res = await op("delete", book, (a) => a.delete(`/api/pods/${book.name}`));
      deleted = res.record;
      if (res.status === 200 || res.status === 404) break;
      await new Promise((r) => setTimeout(r, 1_000));
    }
    await waitFor(
      `${book.name}: its container gone`,
      async () =>
        (await dockerObjects(stack.prefix)).containers.some((c) =>
          c.startsWith(`${stack.prefix}-${book.name}`),
        )
          ? undefined
          : true,
      ENDS_WITHIN_MS,
    );
    expect((await api.get(`/api/pods/${book.name}`)).status).toBe(404);
    if (deleted) deleted.outcome = "deleted";
  }
});

/**
 * Operations by kind: how many, how many answered 2xx and what they ended in (a create `running`, a
 * backup `completed` …), the errors by status and message, and the answer's time (p50, max).
 */
function summary(done: Done[]) {
  type Tally = {
    n: number;
    ok: number;
    ended: Record<string, number>;
    errors: Record<string, number>;
    p50: number;
    max: number;
  };
  const byKind: Record<string, Tally> = {};
  const bump = (m: Record<string, number>, key: string) => {
    m[key] = (m[key] ?? 0) + 1;
  };
  for (const d of done) {
    const k = byKind[d.kind] ?? { n: 0, ok: 0, ended: {}, errors: {}, p50: 0, max: 0 };
    byKind[d.kind] = k;
    k.n++;
    if (d.status >= 200 && d.status < 300) {
      k.ok++;
      bump(k.ended, d.outcome);
    } else bump(k.errors, `${d.status} ${d.outcome.slice(0, 60)}`);
  }
  for (const [kind, k] of Object.entries(byKind)) {
    const ms = done
      .filter((d) => d.kind === kind)
      .map((d) => d.ms)
      .sort((a, b) => a - b);
    k.p50 = ms[Math.floor(ms.length / 2)] ?? 0;
    k.max = ms[ms.length - 1] ?? 0;
  }
  return byKind;
}
