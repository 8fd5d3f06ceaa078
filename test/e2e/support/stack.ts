import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type LocalWorker,
  migratedPersistDir,
  REPO_ROOT,
  startLocalWorker,
} from "../../../bench/support/worker";
import { AGENT_ENV, agentCommand, buildAgent } from "../../../scripts/build-agent";
import { registerHost } from "../../../scripts/lib/hosts";
import { removePodDisks } from "../../support/pod-disk";
import { startFront } from "./front";
import { reserveSshPortBlock, type SshPortBlock } from "./ssh-ports";

/** A free TCP port on 127.0.0.1 (the kernel picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface AgentProcess {
  child: ChildProcess;
  output: string[];
  /** SIGKILL: the agent dies without a goodbye, as on a crash */
  kill(): Promise<void>;
  /** SIGTERM: the graceful path */
  stop(): Promise<void>;
}

/** One container host of a stack: its own agent process, name prefix, SSH ports, ingress and state. */
export interface TestHost {
  hostId: string;
  name: string;
  prefix: string;
  ingressPort: number;
  stateDir: string;
  agentEnv: Record<string, string>;
  agent: AgentProcess;
  startAgent(): Promise<AgentProcess>;
}

export interface Stack {
  worker: LocalWorker;
  /** stop the Worker and start a new one on the same port and database (a deploy, a crash) */
  restartWorker(): Promise<void>;
  /**
   * Each restart's cost: stopping, starting (wrangler's proxy listens) and until `/health` answered
   * through the stack's address. A chaos test prints them when it fails: a restart that took minutes
   * under load reads differently from an operation that never resumed.
   */
  restarts: { at: string; stopMs: number; startMs: number; healthyMs: number }[];
  api: string;
  /** the first host's (most tests run on one host) */
  hostId: string;
  prefix: string;
  /** the first host's ingress: it answers only the edge (test/support/edge.ts signs like it) */
  ingressPort: number;
  /** where visitors reach pods: the edge router in the Worker (`http://<pod>.pods.localhost:<edgePort>`) */
  edgePort: number;
  agentEnv: Record<string, string>;
  agent: AgentProcess;
  startAgent(): Promise<AgentProcess>;
  /** every host of the stack, the first one included */
  hosts: TestHost[];
  /** another host in the same region, as a second machine would join (`npm run host:add` + agent) */
  addHost(options?: HostOptions): Promise<TestHost>;
  stop(): Promise<void>;
}

export interface HostOptions {
  /** extra agent environment */
  env?: Record<string, string>;
  /** the ingress port (default: a free one) */
  ingressPort?: number;
}

/**
 * The agent as production runs it: the compiled bundle (scripts/build-agent.ts), built when missing or
 * older than its sources (the node tests' global setup builds it once per run; benches build it here).
 */
export function spawnAgent(env: Record<string, string>): AgentProcess {
  const [node, args] = agentCommand();
  const child = spawn(node, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...AGENT_ENV, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 500) output.splice(0, 100);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    output,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Worker (workerd, local D1/DO) + a registered host + the agent as its own process against the real
 * Docker engine and nginx. Names carry a unique prefix so a run never touches other containers.
 */
export interface StackOptions {
  /**
   * Talk to the Worker's own workerd (LocalWorker.directUrl) with nothing in front: the API and the
   * agent both. Its address changes on a restart, so `restartWorker` is refused then. Without it the
   * stack's address is a TCP front the test owns (support/front.ts), which a restart re-points.
   */
  direct?: boolean;
  /** more Worker vars, e.g. GITHUB_API_BASE of the git host double (test/support/repohost.ts) */
  vars?: Record<string, string>;
  /**
   * PUBLIC_URL is the Worker's own address (a free port chosen up front), for what hands the
   * Worker's URL to others: the feedback widget's script in a pod's pages, OAuth's issuer.
   */
  publicUrl?: boolean;
  /**
   * more environment of the first host's agent. A PODHOST_STATE_DIR here is used as is (made if
   * missing, removed at stop like the default one): a test can point it at a directory inside a
   * file system it mounted (test/chaos/disk-full.test.ts).
   */
  agentEnv?: Record<string, string>;
  /**
   * wrangler's log level for this stack's Worker (default "none"): "warn" prints the Worker's
   * warnings and errors and workerd's own, for a file that needs to say why its Worker failed.
   */
  logLevel?: "warn" | "error" | "none";
  /** the Worker's DevTools inspector on a free port (LocalWorker.inspectorUrl): bench/soak reads its heap */
  inspector?: boolean;
}

export async function startStack(label: string, options: StackOptions = {}): Promise<Stack> {
  const prefix = `e2e${label}${Date.now().toString(36).slice(-4)}`;
  const sshBlocks: SshPortBlock[] = [];
  await buildAgent();
  // a copy of the migrated template (bench/support/worker.ts): no migrations run per stack
  const persistDir = await migratedPersistDir();
  // the front's port, known before the Worker starts: PUBLIC_URL names it (a direct stack's is its
  // workerd's, which is only learned at start, so a direct stack with a PUBLIC_URL is refused)
  if (options.direct && options.publicUrl)
    throw new Error("publicUrl needs the stack's front (direct: false)");
  const port = options.direct ? undefined : await freePort();
  const workerOptions = {
    persistDir,
    migrated: true,
    vars: {
      POD_DOMAIN: "pods.localhost",
      // git deployments: a test key for secrets at rest, and repositories served over http on loopback
      GIT_TOKEN_KEY: "ZTJlLW9ubHktZ2l0LXRva2VuLWtleS0zMi1ieXRlcyE=",
      // database services: a test key for their passwords at rest
      SERVICE_PASSWORD_KEY: "ZTJlLW9ubHktc2VydmljZS1wYXNzd29yZC1rZXkhISE=",
      // invitation tokens kept sealed for the owner's list
      INVITATION_TOKEN_KEY: "ZTJlLW9ubHktaW52aXRhdGlvbi10b2tlbi1rZXkhISE=",
      ALLOW_HTTP_GIT_LOOPBACK: "true",
      ALLOW_IMPORT_LOOPBACK: "true",
      ...(options.publicUrl ? { PUBLIC_URL: `http://127.0.0.1:${port}` } : {}),
      ...options.vars,
    },
    // PODHOST_E2E_LOG=1 shows the Worker's own log lines when a run needs explaining.
    logLevel: process.env.PODHOST_E2E_LOG ? ("log" as const) : (options.logLevel ?? ("none" as const)),
    inspector: options.inspector,
  };
  // Each host its own prefix, SSH port block and state, as separate machines would have.
  const hostPrefixOf = (n: number) => (n === 0 ? prefix : `${prefix}h${n + 1}`);
  const register = async (n: number, ingressPort: number) => {
    // a block of ports no other stack on this machine holds (ssh-ports.ts)
    const block = await reserveSshPortBlock();
    sshBlocks.push(block);
    return registerHost(
      {
        name: `${hostPrefixOf(n)}-host`,
        region: "eu-central",
        sshHost: "127.0.0.1",
        sshPortMin: block.min,
        sshPortMax: block.max,
        cpu: 64,
        memoryMb: 65536,
        diskGb: 1000,
        // where the edge router reaches this host's ingress (docs/edge.md)
        ingressOrigin: `http://127.0.0.1:${ingressPort}`,
      },
      { persistTo: persistDir },
    );
  };
  // The first host is registered (`npm run host:add`'s code, a wrangler run of seconds) while the
  // Worker starts: neither waits for the other.
  const firstIngressPort = await freePort();
  const [worker, firstRegistration] = await Promise.all([
    startLocalWorker(workerOptions),
    register(0, firstIngressPort),
  ]);
  const front = options.direct ? undefined : await startFront(worker.directUrl, port);
  const api = front ? front.url : worker.directUrl;
  const hosts: TestHost[] = [];

  const addHost = async (opts: HostOptions = {}): Promise<TestHost> => {
    const n = hosts.length;
    const hostPrefix = hostPrefixOf(n);
    const stateDir = opts.env?.PODHOST_STATE_DIR ?? (await mkdtemp(path.join(tmpdir(), "podhost-agent-")));
    await mkdir(stateDir, { recursive: true });
    const ingressPort = n === 0 ? firstIngressPort : (opts.ingressPort ?? (await freePort()));
    const registered = n === 0 ? firstRegistration : await register(n, ingressPort);
    const agentEnv = {
      PODHOST_API_URL: api,
      PODHOST_AGENT_TOKEN: registered.token,
      PODHOST_STATE_DIR: stateDir,
      PODHOST_NAME_PREFIX: hostPrefix,
      PODHOST_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`,
      PODHOST_SSH_LISTEN_HOST: "127.0.0.1",
      // as the Worker's ALLOW_HTTP_GIT_LOOPBACK: the git server double is plain http on 127.0.0.1
      PODHOST_ALLOW_HTTP_GIT_LOOPBACK: "true",
      ...opts.env,
    };
    const host: TestHost = {
      hostId: registered.hostId,
      name: `${hostPrefix}-host`,
      prefix: hostPrefix,
      ingressPort,
      stateDir,
      agentEnv,
      agent: spawnAgent(agentEnv),
      async startAgent() {
        host.agent = spawnAgent(agentEnv);
        return host.agent;
      },
    };
    hosts.push(host);
    return host;
  };

  const first = await addHost(options.agentEnv ? { env: options.agentEnv } : {});
  const stack: Stack = {
    worker,
    api,
    hosts,
    addHost,
    hostId: first.hostId,
    prefix,
    ingressPort: first.ingressPort,
    edgePort: Number(new URL(api).port),
    agentEnv: first.agentEnv,
    get agent() {
      return first.agent;
    },
    startAgent: () => first.startAgent(),
    restarts: [],
    async restartWorker() {
      if (!front) throw new Error("restartWorker needs the stack's front (direct: false)");
      const at = new Date().toISOString();
      const t0 = Date.now();
      // what arrives meanwhile waits for the new Worker, as a deploy's requests would
      front.pause();
      await stack.worker.stop();
      const t1 = Date.now();
      try {
        stack.worker = await startLocalWorker(workerOptions);
      } finally {
        // a failed start still lets the waiting connections go (to the old address: refused)
        front.retarget(stack.worker.directUrl);
      }
      const t2 = Date.now();
      // ready means wrangler's proxy listens; the Worker behind it answers a moment later
      await waitFor(
        "the restarted Worker to answer /health",
        async () =>
          (await fetch(`${stack.api}/health`, { signal: AbortSignal.timeout(5_000) })).ok ? true : undefined,
        120_000,
      );
      const timing = { at, stopMs: t1 - t0, startMs: t2 - t1, healthyMs: Date.now() - t2 };
      stack.restarts.push(timing);
      if (Date.now() - t0 > 30_000)
        console.warn(`[stack ${prefix}] a slow Worker restart: ${JSON.stringify(timing)}`);
    },
    async stop() {
      for (const host of hosts) await host.agent.stop().catch(() => undefined);
      await stack.worker.stop();
      await front?.close();
      for (const host of hosts) {
        await removeByPrefix(host.prefix);
        await stopIngress(host.stateDir);
        await rm(host.stateDir, { recursive: true, force: true });
      }
      await rm(persistDir, { recursive: true, force: true });
      for (const block of sshBlocks) await block.release();
    },
  };
  return stack;
}

async function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("close", () => resolve(out));
  });
}

/** Everything Docker holds under the test prefix goes, whatever state the test left it in. */
export async function removeByPrefix(prefix: string): Promise<void> {
  const containers = (await run("docker", ["ps", "-aq", "--filter", `label=podhost.prefix=${prefix}`]))
    .split(/\s+/)
    .filter(Boolean);
  if (containers.length) await run("docker", ["rm", "-f", ...containers]);
  const volumes = (await run("docker", ["volume", "ls", "-q", "--filter", `name=${prefix}-`]))
    .split(/\s+/)
    .filter(Boolean);
  if (volumes.length) await run("docker", ["volume", "rm", "-f", ...volumes]);
  const networks = (await run("docker", ["network", "ls", "-q", "--filter", `name=${prefix}-`]))
    .split(/\s+/)
    .filter(Boolean);
  if (networks.length) await run("docker", ["network", "rm", ...networks]);
  await removePodDisks(prefix);
}

async function stopIngress(stateDir: string): Promise<void> {
  const conf = path.join(stateDir, "nginx", "nginx.conf");
  await run("nginx", ["-c", conf, "-p", `${path.join(stateDir, "nginx")}/`, "-s", "quit"]);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value (not undefined) or the time is up. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}
