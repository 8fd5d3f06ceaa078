import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type ClientKey, makeKey, randomKeyLogin, sshRun } from "./support/ssh";
import { type Stack, startStack } from "./support/stack";

/**
 * The threat model, one attack per test: a tenant owns a pod (a shell in it, every file in its home,
 * its app's logs) and uses that to hurt the host or other tenants. Each test mounts the attack
 * through the real stack — Worker, agent, Docker, the SSH gateway with OpenSSH's client — and checks
 * that it fails and that the host keeps serving everybody else meanwhile.
 */

type User = Awaited<ReturnType<typeof signUp>>;

describe("a hostile tenant", () => {
  let stack: Stack;
  let mallory: User;
  let knownHosts: string;
  let shellKey: ClientKey;
  let bombKey: ClientKey;
  let port = 0;
  const agentTail = () => stack.agent.output.slice(-15).join("");

  /** The no-op host command (`host.ping` over the wire) as an operator calls it: its round trip in ms. */
  const pingHost = async () => {
    const res = await fetch(`${stack.api}/agent/ping`, {
      headers: { authorization: `Bearer ${stack.agentEnv.PODHOST_AGENT_TOKEN}` },
    });
    const body = (await res.json()) as { pong?: boolean; rtt_ms?: number };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.rtt_ms ?? Number.POSITIVE_INFINITY;
  };

  beforeAll(async () => {
    stack = await startStack("hostile");
    mallory = await signUp(stack.api, "Mallory");
    knownHosts = path.join(await mkdtemp(path.join(tmpdir(), "podhost-kh-")), "known_hosts");
    [shellKey, bombKey] = await Promise.all([makeKey("shell@e2e"), makeKey("bomb@e2e")]);
    await waitForHostOnline(mallory.api);
    const name = `hostile-${stack.prefix.slice(-4)}`;
    port = (await createRunningPods(mallory.api, [[name, "static"]]))[name] ?? 0;
    const added = await mallory.api.post(`/api/pods/${name}/ssh/keys`, { key: shellKey.publicKey });
    expect(added.status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it("cannot stall the agent with a from= pattern built to backtrack (200 stars) in its own authorized_keys", async () => {
    const line = `from="${"*".repeat(200)}x" ${bombKey.publicKey}`;
    const planted = await sshRun(
      shellKey,
      port,
      `printf '%s\\n' '${line}' >> .ssh/authorized_keys`,
      knownHosts,
    );
    expect(planted.code, `${planted.stderr}\nagent: ${agentTail()}`).toBe(0);
    await pingHost(); // warm: the first call opens the Worker's paths

    let attempting = true;
    const rtts: number[] = [];
    const pinging = (async () => {
      while (attempting) rtts.push(await pingHost());
    })();
    const attempt = await sshRun(bombKey, port, "true", knownHosts).finally(() => {
      attempting = false;
    });
    await pinging;

    expect(attempt.code).toBe(255);
    expect(attempt.stderr).toContain("Permission denied");
    expect(rtts.length).toBeGreaterThan(0);
    expect(Math.max(...rtts), `round trips: ${rtts.join(", ")}`).toBeLessThan(100);
    // and the tenant's own way in still works
    expect((await sshRun(shellKey, port, "true", knownHosts)).code).toBe(0);
  });

  it("cannot make the gateway work the engine with a flood of random-key logins", async () => {
    // 300 attempts from 100 loopback addresses (3 each: under the per-address limit, as a botnet's),
    // 20 at a time; the engine's events for this host's containers are counted meanwhile.
    const since = Math.floor(Date.now() / 1000);
    const outcomes = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < 300; i = next++) {
        const o = await randomKeyLogin(port, `127.0.0.${10 + (i % 100)}`);
        outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      }
    };
    const flood = Promise.all(Array.from({ length: 20 }, worker));
    await new Promise((r) => setTimeout(r, 500));
    const t0 = performance.now();
    const login = await sshRun(shellKey, port, "true", knownHosts);
    const loginMs = performance.now() - t0;
    const during = next < 300;
    await flood;
    await new Promise((r) => setTimeout(r, 1_000)); // the engine's last events
    const { stdout } = await promisify(execFile)("docker", [
      "events",
      "--since",
      String(since),
      "--until",
      String(Math.ceil(Date.now() / 1000)),
      "--filter",
      `label=podhost.prefix=${stack.prefix}`,
      "--format",
      "{{.Action}}",
    ]);
    const events = stdout.split("\n").filter(Boolean);
    process.stdout.write(
      `ssh flood (e2e): 300 attempts → ${events.length} engine events (${events.join(", ") || "none"}); ` +
        `outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; the owner's login ${Math.round(loginMs)} ms\n`,
    );
    expect(outcomes.get("refused")).toBe(300);
    expect(login.code, login.stderr).toBe(0);
    expect(during, "the flood was still on during the login").toBe(true);
    expect(loginMs).toBeLessThan(1_000);
    // no exec and no helper container per attempt: at most the owner's session and a few checks
    expect(events.length).toBeLessThan(30);
  });
});
