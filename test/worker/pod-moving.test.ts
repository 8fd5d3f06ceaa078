import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { createDb } from "../../worker/db/client";
import { claimTurn } from "../../worker/services/git/queue";
import { podBusyWith } from "../../worker/services/pods/moving";
import { FakeAgent } from "./support/agent";
import { call } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * A pod whose move to another server has begun refuses what would change it beyond its home until
 * the move ends (docs/hosts.md "During a move"): made on the old host in that window, a deploy's
 * release record, a service or a domain would not arrive on the new one. The host is never asked.
 */

afterEach(() => FakeAgent.closeAll());

const db = createDb(env.DB);

async function moving() {
  const s = await onlineWithPod();
  await env.DB.prepare(
    `INSERT INTO pod_moves (id, pod_id, pod_name, kind, status, from_host_id, created_at)
     VALUES (?, ?, ?, 'evacuate', 'moving', ?, ?)`,
  )
    .bind(`mv_${s.pod.id}`, s.pod.id, s.pod.name, s.host.id, new Date().toISOString())
    .run();
  const moveEnded = () =>
    env.DB.prepare("UPDATE pod_moves SET status = 'done' WHERE pod_id = ?").bind(s.pod.id).run();
  return { ...s, moveEnded };
}

const changes: [string, string, unknown?][] = [
  ["POST", "stop"],
  ["POST", "start"],
  ["POST", "restart"],
  ["PUT", "env", { vars: { GREETING: "hi" } }],
  ["PUT", "node-version", { version: "22" }],
  ["POST", "git/deploy"],
  ["POST", "git/rollback", {}],
  ["POST", "services", { service_type: "redis" }],
  ["POST", "agents", { agent: "codex" }],
  ["POST", "domains", { domain: "www.moving-pod.example.com" }],
  ["POST", "feedback/settings", { enabled: true }],
  ["POST", "diagnosis/fix"],
  [
    "POST",
    "ssh/keys",
    { key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb5w5ggk6V3m0ZtqP3m5b7m8U3gq7t2Wl0x9QH2f8yQ moving" },
  ],
];

describe("a pod being moved to another server", () => {
  it("refuses every change beyond its home with 409 saying so, and its host is not asked", async () => {
    const s = await moving();
    for (const [method, path, body] of changes) {
      const res = await call(method, `/api/pods/${s.pod.name}/${path}`, body, s.as);
      expect({ path, status: res.status }).toEqual({ path, status: 409 });
      expect(res.body.error).toBe(
        `pod ${s.pod.name} is being moved to another server; try again once the move has ended (its events say when)`,
      );
    }
    await s.agent.expectNone("control:call");
    const rows = await env.DB.prepare(
      `SELECT (SELECT COUNT(*) FROM deployments WHERE pod_id = ?1) + (SELECT COUNT(*) FROM pod_services WHERE pod_id = ?1)
         + (SELECT COUNT(*) FROM pod_coding_agents WHERE pod_id = ?1) + (SELECT COUNT(*) FROM domains WHERE pod_id = ?1) AS n`,
    )
      .bind(s.pod.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
  });

  it("still answers reads, and takes changes again once the move has ended", async () => {
    const s = await moving();
    expect((await call("GET", `/api/pods/${s.pod.name}/events`, undefined, s.as)).status).toBe(200);
    expect((await call("GET", `/api/pods/${s.pod.name}/domains`, undefined, s.as)).status).toBe(200);
    await s.moveEnded();
    const res = await call(
      "POST",
      `/api/pods/${s.pod.name}/domains`,
      { domain: "www.moved-pod.example.com" },
      s.as,
    );
    expect(res.status).toBe(201);
  });

  it("a deploy queued by a push waits for its turn until the move has ended", async () => {
    const s = await moving();
    await env.DB.prepare(
      "INSERT INTO deployments (id, pod_id, trigger, status, stage, created_at) VALUES (?, ?, 'push', 'deploying', 'queued', ?)",
    )
      .bind(`dep_${s.pod.id}`, s.pod.id, new Date().toISOString())
      .run();
    expect(await claimTurn(db, `dep_${s.pod.id}`)).toBe("pod-moving");
    await s.moveEnded();
    expect(await claimTurn(db, `dep_${s.pod.id}`)).toBe("run");
    // and an evacuation that begins now waits for it (workflows/pod-move/settle.ts)
    expect(await podBusyWith(db, s.pod.id)).toBe("a deploy");
    await env.DB.prepare("UPDATE deployments SET stage = 'done' WHERE pod_id = ?").bind(s.pod.id).run();
    expect(await podBusyWith(db, s.pod.id)).toBeNull();
  });
});
