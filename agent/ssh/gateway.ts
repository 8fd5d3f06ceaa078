import { createServer, type Server as NetServer, type Socket } from "node:net";
import type { ContainerInfo } from "dockerode";
import type { CipherAlgorithm, Connection, Server as SshServer } from "ssh2";
import type { DockerClient } from "../docker/client";
import { streamExecutor } from "../docker/exec-stream";
import { LABEL_POD, LABEL_SSH_PORT, podNames, prefixFilter } from "../docker/naming";
import { inspectContainer } from "../docker/resources";
import { DOCKER_RUNC_ROOT, RuncContainers } from "../docker/runc";
import { AgentError } from "../errors";
import { NOT_RUNNING } from "../files/run";
import type { PodSshListeners } from "../handlers/deps";
import type { Logger } from "../logger";
import { ConnectionAuth } from "./auth";
import { AuthFailureLimiter, type AuthLimitOptions, DEFAULT_AUTH_LIMIT } from "./auth-limiter";
import { GCM_CIPHERS, readClientOffer, skipIdentWrite } from "./client-offer";
import { type HostKey, loadOrCreateHostKey } from "./host-key";
import { PodKeySets } from "./key-cache";
import { readKeyFileIfChanged } from "./key-file";
import { PodProcessLauncher } from "./pod-process";
import { PodStates } from "./pod-states";
import { RecentLogins } from "./recent-logins";
import { serveSession } from "./session";
import { ssh2 } from "./ssh2";

export interface SshGatewayOptions {
  docker: DockerClient;
  namePrefix: string;
  /** the address every pod's listener binds */
  listenHost: string;
  hostKey: HostKey;
  log: Logger;
  /** no channel data in either direction for this long closes the connection */
  idleTimeoutMs?: number;
  /** time from TCP connect to successful authentication */
  loginGraceMs?: number;
  authLimit?: AuthLimitOptions;
  /** concurrent connections per pod listener */
  maxConnections?: number;
  /** sessions (channels) open at once on one connection (OpenSSH's MaxSessions) */
  maxSessions?: number;
  /** authorized_keys checks running at once across all pods (key-cache.ts) */
  maxKeyLoads?: number;
  /** how long a checked copy of a pod's authorized_keys is used without looking at the file again */
  keysFreshMs?: number;
  /** while a pod's port cannot be bound, how often to try again */
  retryBindMs?: number;
  /**
   * runc's state root of the engine's containers, for sessions without a terminal (pod-process.ts);
   * default the Docker engine's; null: every session through the engine's exec
   */
  runcRoot?: string | null;
}

/**
 * ssh2's ciphers without chacha20-poly1305, for clients without AES-GCM (one that has it gets
 * only AES-GCM offered: ./client-offer.ts). The client's order decides, and OpenSSH lists chacha20
 * first: measured here, 100 MB through ssh2 takes ~0.9 s with it, ~0.65 s with aes128-ctr (OpenSSH's
 * next choice) and ~0.5 s with AES-GCM, because both ends have AES instructions. Every client has AES-CTR,
 * so nobody is locked out (and chacha20 was the cipher of the Terrapin attack).
 */
const CIPHERS = [
  "aes128-gcm@openssh.com",
  "aes256-gcm@openssh.com",
  "aes128-ctr",
  "aes192-ctr",
  "aes256-ctr",
] as const;

/** the gateway's identification line (sent before ssh2 starts, ./client-offer.ts) */
const IDENT = "podhost";
const IDENT_LINE = Buffer.from(`SSH-2.0-${IDENT}\r\n`, "latin1");
/** how long a client's identification and first packet may take before it is served as it is */
const OFFER_WAIT_MS = 2_000;

/** OpenSSH's MaxSessions */
export const MAX_SESSIONS = 10;

interface PodListener {
  port: number;
  server: NetServer;
  /** made when the first client connects (ssh2 is loaded then: ./ssh2.ts) */
  ssh?: SshServer;
  /** the same offering only AES-GCM, for clients that have it (./client-offer.ts) */
  sshGcm?: SshServer;
  sockets: Set<Socket>;
  clients: Set<Connection>;
  listening: boolean;
  retry?: NodeJS.Timeout;
}

/**
 * The host's SSH gateway: every pod has its own port on this host, and a connection to it is a
 * session as pod_user inside that pod's container (shell, exec, scp, sftp). One host key for all
 * pods (see host-key.ts). Authentication is public-key only, against the pod's own
 * `~/.ssh/authorized_keys`, with the options of the key's line applied (key-options.ts). The
 * gateway holds one copy of each pod's file, checked against the file's identity at most once a
 * second and read again when it changed (key-cache.ts), and knows which pods run (pod-states.ts):
 * unauthenticated attempts cost the engine a bounded amount of work whatever their number, and
 * nothing at all for a stopped pod. No forwarding of any kind.
 *
 * Sockets are accepted here and handed to ssh2 (`injectSocket`), so that an address blocked for
 * failed logins is dropped before any key exchange, and Nagle is off for interactive use.
 */
export class SshGateway implements PodSshListeners {
  private readonly listeners = new Map<string, PodListener>();
  private readonly limiter: AuthFailureLimiter;
  private readonly log: Logger;
  private readonly processes: PodProcessLauncher;
  private readonly states: PodStates;
  private readonly keySets: PodKeySets;
  private readonly recentLogins = new RecentLogins();
  private stopped = false;

  constructor(private readonly opts: SshGatewayOptions) {
    this.limiter = new AuthFailureLimiter(opts.authLimit ?? DEFAULT_AUTH_LIMIT);
    const runcRoot = opts.runcRoot === undefined ? DOCKER_RUNC_ROOT : opts.runcRoot;
    const runc = runcRoot ? new RuncContainers(opts.docker, runcRoot) : null;
    this.processes = new PodProcessLauncher(opts.docker, runc);
    this.log = opts.log.child({ component: "ssh" });
    const streams = streamExecutor(opts.docker, runc);
    this.states = new PodStates(
      async (pod) =>
        (await inspectContainer(opts.docker, podNames(opts.namePrefix, pod).container))?.State.Running ??
        false,
    );
    this.keySets = new PodKeySets({
      load: (pod, known) => readKeyFileIfChanged(streams, opts.namePrefix, pod, known),
      maxLoads: opts.maxKeyLoads ?? 4,
      freshMs: opts.keysFreshMs ?? 1_000,
      fullReadMs: 60_000,
    });
  }

  podState(pod: string, running: boolean): void {
    this.states.set(pod, running);
  }

  keysChanged(pod: string): void {
    this.keySets.invalidate(pod);
  }

  /** authorized_keys checks and container inspects the gateway has made for logins (tests, metrics) */
  loginWork(): { keyChecks: number; stateInspects: number } {
    return { keyChecks: this.keySets.loads, stateInspects: this.states.inspects };
  }

  /**
   * A login's view of the pod's keys: null for a pod that does not run (known without asking the
   * engine, see pod-states.ts), else the shared copy (key-cache.ts).
   */
  private async podKeys(pod: string) {
    if (!(await this.states.running(pod))) return null;
    try {
      return await this.keySets.keys(pod);
    } catch (err) {
      // stopped since the gateway last knew: remember it, and refuse as for any stopped pod
      if (err instanceof AgentError && err.message === NOT_RUNNING) {
        this.states.set(pod, false);
        return null;
      }
      throw err;
    }
  }

  /** the port each pod listens on right now */
  ports(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [pod, l] of this.listeners) if (l.listening) out[pod] = l.port;
    return out;
  }

  async open(pod: string, port: number): Promise<void> {
    if (this.stopped) return;
    const existing = this.listeners.get(pod);
    if (existing?.port === port) return;
    if (existing) await this.close(pod);

    const server = createServer((socket) => this.accept(pod, l, socket));
    server.maxConnections = this.opts.maxConnections ?? 64;
    const l: PodListener = { port, server, sockets: new Set(), clients: new Set(), listening: false };
    this.listeners.set(pod, l);
    await this.bind(pod, l, true);
  }

  /** Listen; a port that is taken is logged and tried again later (the pod works, only SSH does not). */
  private bind(pod: string, l: PodListener, first: boolean): Promise<void> {
    return new Promise((resolve) => {
      const onError = (err: NodeJS.ErrnoException) => {
        l.server.off("listening", onListening);
        if (first) {
          this.log.error("ssh: cannot listen for pod", {
            pod,
            port: l.port,
            host: this.opts.listenHost,
            error: err.code ?? err.message,
          });
        }
        if (this.listeners.get(pod) === l && !this.stopped) {
          l.retry = setTimeout(() => void this.bind(pod, l, false), this.opts.retryBindMs ?? 30_000);
          l.retry.unref();
        }
        resolve();
      };
      const onListening = () => {
        l.server.off("error", onError);
        l.listening = true;
        if (!first) this.log.info("ssh: listening for pod after all", { pod, port: l.port });
        l.server.on("error", (err) => this.log.error("ssh listener error", { pod, error: String(err) }));
        resolve();
      };
      l.server.once("error", onError);
      l.server.once("listening", onListening);
      l.server.listen(l.port, this.opts.listenHost);
    });
  }

  async close(pod: string): Promise<void> {
    const l = this.listeners.get(pod);
    if (!l) return;
    this.listeners.delete(pod);
    this.states.forget(pod);
    this.keySets.forget(pod);
    this.recentLogins.forget(pod);
    await this.shut(l);
  }

  private async shut(l: PodListener): Promise<void> {
    clearTimeout(l.retry);
    const closed = l.listening ? new Promise<void>((r) => l.server.close(() => r())) : Promise.resolve();
    for (const c of l.clients) c.end();
    for (const s of l.sockets) s.destroy();
    l.listening = false;
    await closed;
  }

  /**
   * Listen for every pod container of this prefix (the agent's start): the port is a label of the
   * container. `listed`: this prefix's containers (all of them), when the caller has asked already.
   * An engine that cannot be asked is logged: the pods' listeners come with their next start.
   */
  async restore(listed?: Promise<ContainerInfo[]>): Promise<void> {
    const list = await (
      listed ?? this.opts.docker.listContainers({ all: true, filters: prefixFilter(this.opts.namePrefix) })
    ).catch((error: unknown) => {
      this.opts.log.error("ssh: could not list pods to listen for", { error: String(error) });
      return [];
    });
    const opening: Promise<void>[] = [];
    for (const c of list) {
      const pod = c.Labels[LABEL_POD];
      // Helpers (a clone's, a stopped pod's key edits) carry labels too, never the pod's own name.
      if (!pod || !c.Names.includes(`/${podNames(this.opts.namePrefix, pod).container}`)) continue;
      const port = Number(c.Labels[LABEL_SSH_PORT]);
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        this.log.warn("ssh: pod container has no SSH port label (created before SSH); not listening", {
          pod,
        });
        continue;
      }
      this.states.set(pod, c.State === "running");
      opening.push(this.open(pod, port));
    }
    // every pod's own port: the binds need not wait for one another
    await Promise.all(opening);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.listeners.values()];
    this.listeners.clear();
    await Promise.all(all.map((l) => this.shut(l)));
  }

  private accept(pod: string, l: PodListener, socket: Socket) {
    const ip = socket.remoteAddress ?? "";
    if (this.stopped || this.limiter.blocked(ip)) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    socket.on("error", () => undefined); // resets are normal; ssh2 sees the close
    l.sockets.add(socket);
    socket.once("close", () => l.sockets.delete(socket));
    // An address that logged in to this pod lately gets the pod's keys checked beside the key
    // exchange rather than after it (./recent-logins.ts). Free when the copy is fresh; otherwise the
    // check its login would have started (at most one per pod a second, ./key-cache.ts).
    if (this.recentLogins.has(pod, ip)) void this.podKeys(pod).catch(() => undefined);
    // AES-GCM for a client that has it (./client-offer.ts): its offer is read before ssh2 starts
    void readClientOffer(socket, IDENT_LINE, OFFER_WAIT_MS).then(({ gcm }) => {
      if (socket.destroyed || this.stopped || this.listeners.get(pod) !== l) {
        socket.destroy();
        return;
      }
      let server: SshServer;
      try {
        if (gcm) {
          l.sshGcm ??= this.sshServer(pod, l, GCM_CIPHERS);
          server = l.sshGcm;
        } else {
          l.ssh ??= this.sshServer(pod, l, CIPHERS);
          server = l.ssh;
        }
      } catch (err) {
        // ssh2 refusing the host key: this client is turned away, the agent and its pods stay up
        this.log.error("ssh: cannot serve SSH", { pod, error: (err as Error).message });
        socket.destroy();
        return;
      }
      skipIdentWrite(socket, IDENT_LINE);
      server.injectSocket(socket);
    });
  }

  private sshServer(pod: string, l: PodListener, ciphers: readonly CipherAlgorithm[]): SshServer {
    return new (ssh2().Server)(
      { hostKeys: [this.opts.hostKey.privateKey], ident: IDENT, algorithms: { cipher: [...ciphers] } },
      (client, info) => this.serveClient(pod, l, client, info),
    );
  }

  private serveClient(pod: string, l: PodListener, client: Connection, peer: { ip: string; port: number }) {
    const { ip } = peer;
    const log = this.log.child({ pod, ip });
    const container = podNames(this.opts.namePrefix, pod).container;
    l.clients.add(client);
    const idleMs = this.opts.idleTimeoutMs ?? 30 * 60_000;
    const grace = setTimeout(() => client.end(), this.opts.loginGraceMs ?? 60_000);
    let idle: NodeJS.Timeout | undefined;
    // Data marks the time; the timer looks at it only when it fires (a bulk copy moves thousands of
    // chunks a second, and re-arming a timer for each is work for nothing).
    let lastData = Date.now();
    const touch = () => {
      lastData = Date.now();
    };
    const checkIdle = () => {
      const quiet = Date.now() - lastData;
      if (quiet < idleMs) {
        idle = setTimeout(checkIdle, idleMs - quiet);
        return;
      }
      log.info("ssh: idle connection closed", { idleMs });
      client.end();
    };
    const socket = [...l.sockets].find((s) => s.remoteAddress === ip && s.remotePort === peer.port);
    let corked = false;
    // Nagle is off, so every SSH packet would be a TCP segment and a syscall of its own: output
    // produced in one turn of the event loop (an sftp-server's many small replies read from the
    // engine at once) is written to the client in one go instead.
    const coalesceOutput = () => {
      if (corked || !socket) return;
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    };

    const auth = new ConnectionAuth({
      ip,
      loadKeys: () => this.podKeys(pod),
      onFirstFailure: () => {
        if (this.limiter.fail(ip)) log.warn("ssh: too many failed logins; address blocked", { ip });
        if (this.limiter.blocked(ip)) client.end();
      },
      onTooManyTries: () => client.end(),
      onLoadError: (err) => log.warn("ssh: authorized_keys unreadable", { error: String(err) }),
    });

    client.on("error", (err) => {
      // Protocol errors and dropped connections: the client's business, worth a line at most.
      if (auth.succeeded) log.warn("ssh connection error", { error: err.message });
    });
    client.on("authentication", (ctx) => auth.handle(ctx));
    client.on("ready", () => {
      // the connection's first key was refused, a later one let it in: not a failed login
      if (auth.failed) this.limiter.forgive(ip);
      this.recentLogins.add(pod, ip);
      clearTimeout(grace);
      touch();
      idle = setTimeout(checkIdle, idleMs);
    });

    let sessions = 0;
    const maxSessions = this.opts.maxSessions ?? MAX_SESSIONS;
    client.on("session", (accept, reject) => {
      // ssh2 opens no channel before authentication, so there are options: checked all the same
      const options = auth.options;
      if (!options || sessions >= maxSessions) return reject();
      const channel = accept();
      sessions++;
      channel.once("close", () => sessions--);
      serveSession(channel, {
        processes: this.processes,
        pod,
        container,
        log,
        touch,
        coalesceOutput,
        options,
        podActivity: () => this.keySets.stale(pod),
      });
    });
    // No forwarding: not to the pod's network, not back from it, not to sockets, not X11 or agents.
    client.on("tcpip", (_accept, reject) => reject());
    client.on("openssh.streamlocal", (_accept, reject) => reject());
    client.on("request", (_accept, reject) => reject?.());

    client.on("close", () => {
      clearTimeout(grace);
      clearTimeout(idle);
      l.clients.delete(client);
    });
  }
}

/**
 * The gateway of an agent with its host key (made on first start), listening for no pod yet: its
 * `restore()` opens them. The agent's start dials the control plane meanwhile.
 */
export async function createSshGateway(
  opts: Omit<SshGatewayOptions, "hostKey"> & { stateDir: string },
): Promise<SshGateway> {
  const hostKey = await loadOrCreateHostKey(opts.stateDir);
  opts.log.info("ssh gateway host key", { fingerprint: hostKey.fingerprint });
  return new SshGateway({ ...opts, hostKey });
}

/** The gateway of an agent: its host key, then a listener for every pod it has. */
export async function startSshGateway(
  opts: Omit<SshGatewayOptions, "hostKey"> & { stateDir: string },
): Promise<SshGateway> {
  const gateway = await createSshGateway(opts);
  await gateway.restore();
  return gateway;
}
