import { generateKeyPairSync } from "node:crypto";
import { rm } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDockerClient } from "../../agent/docker/client";
import { SshGateway } from "../../agent/ssh/gateway";
import { loadOrCreateHostKey } from "../../agent/ssh/host-key";
import { type Agent, DOCKER_SOCKET, freePort, podSpec, startAgent } from "./helpers";
import { type ClientKey, clientOptions, makeKey, run, tempDir } from "./ssh-support";

/**
 * The gateway under unauthenticated load (#11 item 3) and the pod writes with stdin under a soak
 * (#11 item 9), against real pods. Figures are printed (and kept in docs/ssh.md).
 */

const PODS = ["load-a", "load-b", "load-c", "load-d", "load-e"];
const ATTEMPTS = 500;
/** the flood comes from this many loopback addresses (127.0.0.10…), 5 attempts each: under the per-address limit, as a botnet would */
const ADDRESSES = 100;
const CONCURRENCY = 25;

let agent: Agent;
let dir: string;
let knownHosts: string;
let key: ClientKey;

const print = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

beforeAll(async () => {
  agent = await startAgent();
  dir = await tempDir();
  knownHosts = join(dir, "known_hosts");
  key = await makeKey(dir, "legit");
  await Promise.all(
    PODS.map((name) =>
      agent.handlers["pod.create"](podSpec(name, { authorizedKeys: [key.publicKey] }), agent.ctx),
    ),
  );
});

afterAll(async () => {
  await agent?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** One login with a key the pod does not know, from `from`: how it ended. */
function attempt(port: number, from: string, privateKey: string): Promise<string> {
  return new Promise((resolve) => {
    let outcome: string | undefined;
    const done = (o: string) => {
      outcome ??= o;
    };
    const client = new ssh2.Client();
    const socket = connect({ host: "127.0.0.1", port, localAddress: from });
    socket.on("error", (err) => done(`socket: ${err.message}`));
    client.on("ready", () => {
      done("logged in");
      client.end();
    });
    client.on("error", (err: Error & { level?: string }) =>
      done(err.level === "client-authentication" ? "refused" : `error: ${err.message}`),
    );
    client.on("close", () => resolve(outcome ?? "closed"));
    socket.once("connect", () =>
      client.connect({
        sock: socket,
        username: "pod_user",
        privateKey,
        tryKeyboard: false,
        readyTimeout: 30_000,
        hostVerifier: () => true,
      }),
    );
  });
}

describe("the gateway under a flood of unauthenticated logins", () => {
  it(`${ATTEMPTS} random keys against ${PODS.length} pods cost a bounded number of engine calls; a real login meanwhile takes under 1 s`, async () => {
    // A gateway of its own, with the agent's defaults, whose engine calls are counted.
    const docker = createDockerClient(DOCKER_SOCKET);
    const calls: string[] = [];
    const modem = docker.modem as {
      dial: (opts: { path?: string; method?: string }, cb: unknown) => unknown;
    };
    const dial = modem.dial.bind(modem);
    modem.dial = (opts, cb) => {
      calls.push(
        `${opts.method} ${opts.path
          ?.replace(/\/containers\/[^/]+/, "/containers/…")
          .replace(/\/exec\/[^/]+/, "/exec/…")
          .replace(/\?.*/, "")}`,
      );
      return dial(opts, cb);
    };
    const gateway = new SshGateway({
      docker,
      namePrefix: agent.config.namePrefix,
      listenHost: "127.0.0.1",
      hostKey: await loadOrCreateHostKey(agent.stateDir),
      log: agent.log,
    });
    try {
      const ports: number[] = [];
      for (const pod of PODS) {
        const port = await freePort();
        await gateway.open(pod, port);
        ports.push(port);
      }
      // Node's own keys (ssh2's generated ed25519 keys now and then fail its own parser)
      const keys = Array.from(
        { length: ATTEMPTS },
        () =>
          generateKeyPairSync("ec", {
            namedCurve: "prime256v1",
            privateKeyEncoding: { type: "sec1", format: "pem" },
            publicKeyEncoding: { type: "spki", format: "pem" },
          }).privateKey,
      );
      const outcomes = new Map<string, number>();
      const t0 = performance.now();
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < ATTEMPTS; i = next++) {
          const port = ports[i % ports.length] as number;
          const from = `127.0.0.${10 + (i % ADDRESSES)}`;
          const o = await attempt(port, from, keys[i] as string);
          outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
        }
      };
      const flood = Promise.all(Array.from({ length: CONCURRENCY }, worker));

      // the pod's owner logs in meanwhile, with OpenSSH, from an address of their own
      await new Promise((r) => setTimeout(r, 500));
      const logins: number[] = [];
      // whether each login began while attempts were still being sent (the flood lasts a few seconds)
      const duringFlood: boolean[] = [];
      for (let i = 0; i < 3; i++) {
        duringFlood.push(next < ATTEMPTS);
        const l0 = performance.now();
        const r = await run("ssh", [
          ...clientOptions(knownHosts, key, { BindAddress: "127.0.0.2" }),
          "-p",
          String(ports[i] as number),
          "pod_user@127.0.0.1",
          "true",
        ]);
        logins.push(performance.now() - l0);
        expect(r.code, r.stderr).toBe(0);
      }
      expect(duringFlood[0], "the first login began during the flood").toBe(true);
      await flood;
      const seconds = (performance.now() - t0) / 1000;
      const work = gateway.loginWork();
      const byCall = new Map<string, number>();
      for (const c of calls) byCall.set(c, (byCall.get(c) ?? 0) + 1);
      print(
        `ssh flood: ${ATTEMPTS} attempts in ${seconds.toFixed(1)} s → ${calls.length} engine calls ` +
          `(${[...byCall].map(([c, n]) => `${n}× ${c}`).join(", ")}), ${work.keyChecks} authorized_keys checks ` +
          `in pods, ${work.stateInspects} state inspects; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; ` +
          `legitimate logins (ssh … true) ${logins.map((l) => `${Math.round(l)} ms`).join(", ")}`,
      );
      expect(outcomes.get("refused")).toBe(ATTEMPTS);
      // at most one check per pod a second (plus one after each real session), whatever the number of attempts
      expect(work.keyChecks).toBeLessThanOrEqual(PODS.length * (Math.ceil(seconds) + 1) + logins.length);
      // the checks go through runc here: the engine is asked only which pods run and for runc's ids
      expect(calls.length).toBeLessThanOrEqual(3 * work.keyChecks + work.stateInspects + PODS.length);
      expect(calls.length).toBeLessThan(ATTEMPTS / 5);
      expect(Math.max(...logins)).toBeLessThan(1_000);
    } finally {
      await gateway.stop();
    }
  });
});

describe("writes with stdin", () => {
  it("300 pod key adds and removes, 300 env writes meanwhile: none fails", async () => {
    const { handlers, ctx } = agent;
    const extra = await makeKey(dir, "soak");
    const timed = async (durations: number[], op: () => Promise<unknown>) => {
      const t0 = performance.now();
      await op();
      durations.push(performance.now() - t0);
    };
    const keyOps: number[] = [];
    const envOps: number[] = [];
    const t0 = performance.now();
    // several pods at once, as several tenants would: each chain waits on its own pod's lock only
    const keyChain = async (pod: string, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        await timed(keyOps, async () =>
          expect(await handlers["pod.ssh.keys.add"]({ name: pod, key: extra.publicKey }, ctx)).toEqual({
            added: true,
          }),
        );
        await timed(keyOps, async () =>
          expect(await handlers["pod.ssh.keys.remove"]({ name: pod, key: extra.publicKey }, ctx)).toEqual({
            removed: true,
          }),
        );
      }
    };
    const envChain = async (pod: string, writes: number) => {
      for (let i = 0; i < writes; i++) {
        await timed(envOps, async () => {
          const r = await handlers["pod.env.set"](
            { name: pod, vars: { SOAK: String(i) }, restartApp: false },
            ctx,
          );
          expect(r.vars.SOAK).toBe(String(i));
        });
      }
    };
    await Promise.all([
      keyChain("load-a", 50),
      keyChain("load-b", 50),
      keyChain("load-c", 50),
      envChain("load-c", 100),
      envChain("load-d", 100),
      envChain("load-e", 100),
    ]);
    const line = (what: string, xs: number[]) =>
      `${what}: ${xs.length}, p50 ${Math.round(percentile(xs, 50))} ms, p99 ${Math.round(percentile(xs, 99))} ms, max ${Math.round(Math.max(...xs))} ms`;
    print(
      `soak (${((performance.now() - t0) / 1000).toFixed(1)} s): ${line("key add/remove", keyOps)}; ${line("env set", envOps)}`,
    );
    expect(keyOps).toHaveLength(300);
    expect(envOps).toHaveLength(300);
    expect(Math.max(...keyOps, ...envOps)).toBeLessThan(5_000);
  }, 180_000);
});
