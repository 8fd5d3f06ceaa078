/**
 * bench/soak's tenants and what they do: each kind of operation (its weight, its interval, how it runs
 * and when it has ended), the next kind drawn for a tenant, and a tenant's loop until the end.
 */
import { randomBytes } from "node:crypto";
import { sleep } from "../../test/e2e/support/stack";
import type { Files, GitServer } from "../../test/support/git-server";
import {
  type Api,
  atS,
  expectStatus,
  Failed,
  failures,
  KINDS,
  type Kind,
  type KindStats,
  NotEnded,
  notEnded,
  polled,
  Refused,
  stats,
  until,
} from "./records";
import { LIMIT_MS, now, SOAK_DIR, THINK_MS } from "./settings";

/** A small Node app with one local dependency (no registry needed) saying `text`. */
export const nodeApp = (text: string): Files => ({
  "package.json": JSON.stringify({
    name: "app",
    version: "1.0.0",
    scripts: { start: "node server.js" },
    dependencies: { greet: "file:./vendor/greet" },
  }),
  "vendor/greet/package.json": JSON.stringify({ name: "greet", version: "1.0.0", main: "index.js" }),
  "vendor/greet/index.js": 'module.exports = () => "greet";\n',
  "server.js": serverJs(text),
});
const serverJs = (text: string) => `const http = require("http");
const greet = require("greet");
http.createServer((req, res) => res.end("<h1>${text}</h1> " + greet()))
  .listen(Number(process.env.PORT), "0.0.0.0");
`;

export interface Tenant {
  i: number;
  api: Api;
  /** the git server its repository is on */
  git: GitServer;
  /** the stack's short tag, in the names of its pods */
  tag: string;
  pod: string;
  repo: string;
  /** the short-lived static pod, when one is up */
  churn?: string;
  churnCount: number;
  /** the newest completed backup */
  backupId?: string;
  /** the latest backup holds a Redis dump: a restore of it needs the service (else 409, rightly) */
  backupHasRedis?: boolean;
  redis: boolean;
  round: number;
  lastAt: Partial<Record<Kind, number>>;
}

interface KindSpec {
  weight: number;
  /** at least this long between two of this kind by one tenant */
  everyS: number;
  eligible?: (t: Tenant) => boolean;
  run: (t: Tenant) => Promise<void>;
}

export const podList = async (t: Tenant) => {
  const r = polled(await t.api.get("/api/pods?limit=100"), "list pods");
  return r ? (r.body.pods as { name: string; status: string }[]) : undefined;
};

// Intervals: backups and restores share 10 an hour per pod (FAIR_SHARE_LIMITS.backup): each at most
// every 12.5 min leaves room; deploys 20 per pod in 10 min; service installs 10 per pod in 10 min;
// pod creates 50 an hour per client address.
const SPECS: Record<Kind, KindSpec> = {
  "file write": {
    weight: 5,
    everyS: 0,
    async run(t) {
      const file = `${SOAK_DIR}/f${t.round % 20}.txt`;
      const content = `${t.i}:${t.round}:${randomBytes(2048).toString("hex")}`;
      expectStatus(
        await t.api.put(`/api/pods/${t.pod}/files/content`, { path: file, content }),
        "write",
        200,
      );
      const back = expectStatus(
        await t.api.get(`/api/pods/${t.pod}/files/content?path=${encodeURIComponent(file)}`),
        "read back",
        200,
      );
      if (back.body.content !== content) throw new Failed(`read back ${file}: other bytes than written`);
    },
  },
  exec: {
    weight: 5,
    everyS: 0,
    async run(t) {
      const r = expectStatus(
        await t.api.post(`/api/pods/${t.pod}/exec`, {
          command: ["sh", "-c", `cat ${SOAK_DIR}/*.txt 2>/dev/null | wc -c`],
          timeout_s: 60,
        }),
        "exec",
        200,
      );
      if (r.body.exit_code !== 0) throw new Failed(`exec: exit ${r.body.exit_code}: ${r.body.stderr}`);
    },
  },
  env: {
    weight: 2,
    everyS: 20,
    async run(t) {
      expectStatus(
        await t.api.put(`/api/pods/${t.pod}/env`, { vars: { SOAK_ROUND: String(t.round) } }),
        "env",
        200,
      );
    },
  },
  deploy: {
    weight: 2,
    everyS: 60,
    async run(t) {
      await t.git.commit(t.repo, { "server.js": serverJs(`tenant ${t.i} round ${t.round}`) });
      const since = now();
      const r = expectStatus(await t.api.post(`/api/pods/${t.pod}/git/deploy`), "deploy", 202);
      const id = r.body.id as string;
      const done = await until("deploy", since, LIMIT_MS.deploy, async () => {
        const d = polled(await t.api.get(`/api/pods/${t.pod}/git/deployments/${id}`), "deployment");
        return !d || d.body.status === "deploying" ? undefined : d.body;
      });
      if (done.status !== "success") throw new Failed(`deploy ${id}: ${done.status}: ${done.error ?? ""}`);
    },
  },
  backup: {
    weight: 2,
    everyS: 750,
    async run(t) {
      const list = expectStatus(await t.api.get(`/api/pods/${t.pod}/backups`), "list backups", 200).body;
      const backups = list.backups as { id: string; created_at: string }[];
      if (list.count >= list.limit) {
        const oldest = [...backups].sort((a, b) => a.created_at.localeCompare(b.created_at))[0];
        if (oldest)
          expectStatus(await t.api.delete(`/api/pods/${t.pod}/backups/${oldest.id}`), "delete backup", 200);
        if (oldest?.id === t.backupId) t.backupId = undefined;
      }
      const since = now();
      const r = expectStatus(
        await t.api.post(`/api/pods/${t.pod}/backups`, { note: `soak ${t.round}` }),
        "backup",
        202,
      );
      const id = r.body.id as string;
      const done = await until("backup", since, LIMIT_MS.backup, async () => {
        const b = polled(await t.api.get(`/api/pods/${t.pod}/backups/${id}`), "backup");
        return !b || b.body.status === "in_progress" ? undefined : b.body;
      });
      if (done.status !== "completed") throw new Failed(`backup ${id}: ${done.status}: ${done.error ?? ""}`);
      t.backupId = id;
      t.backupHasRedis = t.redis;
    },
  },
  restore: {
    weight: 2,
    everyS: 750,
    // a backup with a Redis dump is restored only while the pod has Redis: the bench removes and
    // installs the service between backups, and the refusal otherwise is the product's right answer
    eligible: (t) => t.backupId !== undefined && (!t.backupHasRedis || t.redis),
    async run(t) {
      const id = t.backupId as string;
      const before = expectStatus(await t.api.get(`/api/pods/${t.pod}/events?limit=200`), "events", 200);
      const seen = new Set((before.body.events as { id: string }[]).map((e) => e.id));
      const since = now();
      expectStatus(await t.api.post(`/api/pods/${t.pod}/backups/${id}/restore`), "restore", 202);
      const event = await until("restore", since, LIMIT_MS.restore, async () => {
        const list = polled(await t.api.get(`/api/pods/${t.pod}/events?limit=50`), "events");
        if (!list) return undefined;
        return (list.body.events as { id: string; type: string; message: string; metadata?: string }[]).find(
          (e) =>
            !seen.has(e.id) &&
            (e.type === "restore_completed" || e.type === "restore_failed") &&
            e.metadata?.includes(id),
        );
      });
      if (event.type !== "restore_completed") throw new Failed(`restore of ${id}: ${event.message}`);
    },
  },
  "service install": {
    weight: 1,
    everyS: 120,
    eligible: (t) => !t.redis,
    async run(t) {
      const since = now();
      expectStatus(
        await t.api.post(`/api/pods/${t.pod}/services`, { service_type: "redis" }),
        "install",
        202,
      );
      t.redis = true;
      const s = await until("service install", since, LIMIT_MS.service, async () => {
        const list = polled(await t.api.get(`/api/pods/${t.pod}/services`), "services");
        if (!list) return undefined;
        const redis = (list.body as { service_type: string; status: string }[]).find(
          (x) => x.service_type === "redis",
        );
        return redis && redis.status !== "installing" ? redis : undefined;
      });
      if (s.status !== "running") throw new Failed(`redis: ${JSON.stringify(s).slice(0, 300)}`);
    },
  },
  "service remove": {
    weight: 1,
    everyS: 120,
    eligible: (t) => t.redis,
    async run(t) {
      expectStatus(await t.api.delete(`/api/pods/${t.pod}/services/redis`), "remove", 200);
      t.redis = false;
    },
  },
  create: {
    weight: 1,
    everyS: 90,
    eligible: (t) => t.churn === undefined,
    async run(t) {
      const name = `sk${t.tag}-t${t.i}-c${++t.churnCount}`;
      const since = now();
      expectStatus(await t.api.post("/api/pods", { name, preset: "static" }), "create", 202);
      t.churn = name;
      const pod = await until("create", since, LIMIT_MS.create, async () => {
        const p = (await podList(t))?.find((x) => x.name === name);
        return p && p.status !== "creating" ? p : undefined;
      });
      if (pod.status !== "running") throw new Failed(`create ${name}: ${pod.status}`);
    },
  },
  delete: {
    weight: 1,
    everyS: 30,
    eligible: (t) => t.churn !== undefined,
    async run(t) {
      expectStatus(await t.api.delete(`/api/pods/${t.churn}`), "delete", 200);
      t.churn = undefined;
    },
  },
};

/** The next kind for a tenant: weighted among those whose interval has passed. */
function nextKind(t: Tenant): Kind {
  const ready = KINDS.filter((k) => {
    const spec = SPECS[k];
    const last = t.lastAt[k];
    return (spec.eligible?.(t) ?? true) && (last === undefined || now() - last >= spec.everyS * 1000);
  });
  const total = ready.reduce((s, k) => s + SPECS[k].weight, 0);
  let pick = Math.random() * total;
  for (const k of ready) {
    pick -= SPECS[k].weight;
    if (pick <= 0) return k;
  }
  return "exec";
}

async function runOp(t: Tenant, kind: Kind): Promise<void> {
  const s = stats.get(kind) as KindStats;
  t.lastAt[kind] = now();
  t.round++;
  const start = now();
  try {
    await SPECS[kind].run(t);
    s.ok++;
    s.ms.push(now() - start);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof Refused) s.refused429++;
    else if (error instanceof NotEnded) {
      s.notEnded++;
      notEnded.push({ tenant: t.i, kind, what: reason });
    } else {
      s.failed++;
      s.ms.push(now() - start);
      failures.push({ atS: atS(), tenant: t.i, kind, reason });
    }
  }
}

export async function tenantLoop(t: Tenant, endAt: number): Promise<void> {
  // tenants start spread over the first think time
  await sleep(Math.random() * THINK_MS);
  while (now() < endAt) {
    await runOp(t, nextKind(t));
    await sleep(THINK_MS * (0.5 + Math.random()));
  }
}
