/**
 * The host agent: dials the control plane, runs its commands against the local Docker engine and
 * nginx, and reports what it sees. Run with PODHOST_API_URL and PODHOST_AGENT_TOKEN (`npm run agent`).
 */

import { edgeSecretFromToken } from "../shared/edge-proof";
import { PROTOCOL_VERSION } from "../shared/protocol";
import { removeBackupLeftovers } from "./backups/stopped-pod";
import { createBackupStore } from "./backups/store";
import { loadConfig, requireConnection } from "./config";
import { Dispatcher } from "./connection/dispatch";
import { ControlSocket } from "./connection/socket";
import { prepareHostCache, sweepHostCache } from "./disk/host-cache";
import { podDiskOf } from "./disk/pod-disk";
import { createDockerClient } from "./docker/client";
import { hideNamePrefix } from "./docker/engine-errors";
import { watchDockerEvents } from "./docker/events";
import { LABEL_POD, podNames, prefixFilter } from "./docker/naming";
import { inspectContainer } from "./docker/resources";
import { EgressKeeper } from "./egress/keeper";
import type { DeployLogMessage } from "./git/log";
import { removeGitLeftovers } from "./handlers/git";
import { KeyedLock } from "./handlers/keyed-lock";
import { createHandlers, inventoryOf } from "./handlers/pods";
import { HealthMonitor } from "./health/monitor";
import { IngressKeeper } from "./ingress/keeper";
import { Ingress } from "./ingress/nginx";
import { collectAll, LogHistory } from "./inside/history";
import { createLogger } from "./logger";
import { startPodWatch } from "./metrics/watch";
import { SidecarReporter } from "./services/reports";
import { podsWithServices, renameLegacySidecars, syncSidecars } from "./services/sidecars";
import { createSshGateway } from "./ssh/gateway";
import { createBlobStore } from "./transfer/blobs";
import { createRelayClient } from "./transfer/relay";
import { AGENT_VERSION } from "./version";

const SHUTDOWN_DRAIN_MS = 20_000;
/** how long after the start's container list was asked for the first hello may use it as its inventory */
const START_LIST_FRESH_MS = 2_000;
/** the host's problem while its start's checks and clean-ups run (the hello may go out before they end) */
const STARTING = "the agent is starting: its ingress and egress checks are running";

export async function startAgent(env: Record<string, string | undefined> = process.env) {
  const config = requireConnection(loadConfig(env));
  const log = createLogger({ component: "agent" });
  // engine text told to a tenant leaves out the host's name prefix (agent/docker/engine-errors.ts)
  hideNamePrefix(config.namePrefix);
  // The socket first: its handshake overlaps the whole start below. Its hello waits only until the
  // agent is built (`built`), and says the host takes no pods while the start's checks run (STARTING);
  // their outcome follows as `agent:host-health` (greet).
  let markBuilt = () => {};
  const built = new Promise<void>((resolve) => {
    markBuilt = resolve;
  });
  let markWelcomed = () => {};
  const connectUrl = new URL("/agent/connect", config.apiUrl);
  connectUrl.protocol = connectUrl.protocol === "https:" ? "wss:" : "ws:";

  const socket = new ControlSocket({
    url: connectUrl.toString(),
    token: config.agentToken,
    log,
    onOpen: (send) => {
      const welcomed = new Promise<void>((resolve) => {
        markWelcomed = resolve;
      });
      greeted = built.then(() => greet(send, welcomed));
      return greeted;
    },
    onMessage: (message, send) => {
      switch (message.type) {
        case "control:call":
          // after this connection's hello and the start's checks and clean-ups: nothing runs before them
          void greeted
            .catch(() => undefined)
            .then(() => dispatcher.handle(message))
            .then(send);
          return;
        case "control:welcome":
          markWelcomed();
          if (message.orphans.length > 0) {
            log.warn("containers on this host that belong to no pod (left in place for an operator)", {
              orphans: message.orphans,
            });
          }
          return;
        default:
          return;
      }
    },
  });
  let greeted: Promise<void> = built;
  socket.start();

  // Without its pod disk the agent would make homes any tenant can grow until the host is full.
  // A start that fails here closes the socket it opened (the entry point exits; a test's process goes on).
  const failed = (error: unknown) => socket.stop().then(() => Promise.reject(error));
  const disk = podDiskOf(config.podDiskRoot);
  if (disk) await disk.check().catch(failed);
  else log.warn("PODHOST_POD_DISK_ROOT is empty: pods' homes have no disk limit");
  // What the host fetches for others (git lookups and deploy caches, coding agents) under its own limit.
  config.cacheDir = await prepareHostCache(config).catch(failed);
  const docker = createDockerClient(config.dockerSocket);
  // the edge's proof (docs/edge.md): its secret is derived from the token, so a rotation rotates it
  const edgeSecret = await edgeSecretFromToken(config.agentToken);
  const ingress = new Ingress({ stateDir: config.stateDir, listen: config.ingressListen, edgeSecret, log });
  // SSH is one feature of the pods, not a reason to leave them unmanaged: without it the agent runs on.
  // Its pods' listeners open with the start's other checks (`startup`), before the host takes pods.
  const ssh = await createSshGateway({
    docker,
    namePrefix: config.namePrefix,
    listenHost: config.sshListenHost,
    idleTimeoutMs: config.sshIdleTimeoutMs,
    runcRoot: config.runcRoot,
    stateDir: config.stateDir,
    log,
  }).catch((error: unknown) => {
    log.error("ssh gateway failed to start; pods get no SSH", { error: String(error) });
    return undefined;
  });
  const blobs = createBlobStore(config.apiUrl, config.agentToken);
  const relay = createRelayClient(config.apiUrl, config.agentToken);
  const backups = createBackupStore(config.apiUrl, config.agentToken);
  const health = new HealthMonitor({ docker, log });
  const sidecarReports = new SidecarReporter();
  const deps = {
    config,
    docker,
    ingress,
    log,
    locks: new KeyedLock(),
    ssh,
    blobs,
    relay,
    backups,
    health,
    // build output of deploys; dropped while there is no connection (the outcome still arrives)
    deployLog: (message: DeployLogMessage) => socket.send(message),
  };
  const handlers = createHandlers(deps);
  const dispatcher = new Dispatcher(handlers, log);

  /**
   * The hello of a new connection, as soon as the agent is built: the inventory lets the control plane
   * reconcile what it believes with what this host has, and `problem` says whether the host takes
   * pods (not while the start's checks run: the control plane places no pod on a host with a
   * problem). Once the checks are done and the control plane has taken the hello in (its welcome:
   * a report sent after it is applied after it), the host's state follows if it changed since.
   */
  const greet = async (send: (message: unknown) => void, welcomed: Promise<void>) => {
    const inventory = await inventoryNow();
    const told = hostProblem();
    send({
      type: "agent:hello",
      protocol: PROTOCOL_VERSION,
      agentVersion: AGENT_VERSION,
      inventory: inventory.pods,
      problem: told,
    });
    // A new connection may face a control plane that remembers anything: say it all again.
    health.resync();
    sidecarReports.resync();
    await started;
    // not awaited: the calls wait for the start only, not for the control plane's welcome
    void welcomed.then(() => {
      const problem = hostProblem();
      if (problem !== told) send({ type: "agent:host-health", problem });
    });
  };

  /** The start's own list while it is fresh (the first hello, moments after it), else a new one. */
  const inventoryNow = async () => {
    if (!startListUsed && Date.now() - startListAt < START_LIST_FRESH_MS) {
      startListUsed = true;
      const list = await startList.catch(() => null);
      if (list) return { pods: inventoryOf(list, config.namePrefix) };
    }
    return handlers["host.inventory"]({}, { signal: AbortSignal.timeout(30_000), log }).catch(
      (error: unknown) => {
        log.warn("inventory unavailable (is the Docker engine up?)", { error: String(error) });
        return { pods: [] };
      },
    );
  };

  // Whatever keeps this host from taking pods: its start, its ingress, its pods' egress rules.
  let starting = true;
  const hostProblem = () =>
    [starting ? STARTING : null, keeper.problem, egress.problem].filter(Boolean).join("; ") || null;
  const onHostHealth = () => {
    if (socket.connected) socket.send({ type: "agent:host-health", problem: hostProblem() });
  };
  const keeper = new IngressKeeper(ingress, {
    intervalMs: config.ingressCheckMs,
    log,
    onChange: onHostHealth,
  });
  const egress = new EgressKeeper({
    docker,
    namePrefix: config.namePrefix,
    intervalMs: config.egressCheckMs,
    log,
    onChange: onHostHealth,
  });

  // Sidecars made under their earlier names take the new ones before anything looks them up.
  const renamed = renameLegacySidecars(docker, config.namePrefix, log).catch((error: unknown) =>
    log.warn("could not rename sidecars to their helper names", { error: String(error) }),
  );
  // Database sidecars in step with their pods: the engine may have restarted pods (new network
  // namespaces) while this agent was down. Events after this are handled by the watcher.
  void renamed
    .then(() => podsWithServices(docker, config.namePrefix))
    .then(async (pods) => {
      for (const pod of pods) await syncSidecars(deps, pod);
    })
    .catch((error: unknown) => log.warn("sidecars not checked at start", { error: String(error) }));

  // One list of this prefix's containers at the start, for the gateway's listeners and the first
  // hello's inventory: with 50 pods a list is ~20–40 ms of the engine's CPU, and the inventory's,
  // asked for once the socket was open, was the last thing the first hello waited for.
  const startList = docker.listContainers({ all: true, filters: prefixFilter(config.namePrefix) });
  const startListAt = Date.now();
  let startListUsed = false;
  startList.catch(() => undefined); // its readers say what failed
  const sshRestored = ssh?.restore(startList) ?? Promise.resolve();
  // After the gateway's listeners are open: a pod that starts from here on gets its listener from the
  // events (and one started meanwhile too: the events are asked for since the watcher's start second).
  const stopWatching = new AbortController();
  void sshRestored.then(() =>
    watchDockerEvents(
      deps,
      {
        podStatus: (pod, reason) => {
          if (dispatcher.isBusy(pod.name)) return;
          socket.send({ type: "agent:pod-status", pod, reason });
        },
      },
      stopWatching.signal,
    ),
  );

  // Before the first hello, so it says whether this host can serve; then kept up (and retried).
  // The checks and clean-ups run at once; the host takes pods once they are done (greet).
  const startup = Promise.all([
    sshRestored,
    egress.start(),
    renamed,
    // A deploy the previous run did not finish left its build or candidate container behind (a
    // candidate's pod is routed back to its own container: after the ingress is up).
    keeper
      .start()
      .then(() =>
        removeGitLeftovers(deps).catch((error: unknown) =>
          log.warn("could not remove leftovers of unfinished deploys", { error: String(error) }),
        ),
      ),
    // ...and a stopped pod's backup or restore its helper containers (agent/backups/stopped-pod.ts).
    removeBackupLeftovers(docker, config.namePrefix, log).catch((error: unknown) =>
      log.warn("could not remove leftovers of unfinished backups", { error: String(error) }),
    ),
  ]);
  const started = startup.then(() => {
    starting = false;
  });
  markBuilt();
  await started;
  // Metrics and app health, every PODHOST_METRICS_INTERVAL_S; what finds no connection is dropped.
  const watch = startPodWatch({
    config,
    docker,
    log,
    monitor: health,
    sidecars: sidecarReports,
    busy: (pod) => dispatcher.isWorking(pod),
    send: (message) => {
      if (!socket.connected) return false;
      socket.send(message);
      return true;
    },
  });
  // The host cache's leftovers (lookups cut short, caches of pods gone from this host), now and then.
  const sweep = () =>
    sweepHostCache(
      config,
      async (pod) => Boolean(await inspectContainer(docker, podNames(config.namePrefix, pod).container)),
      // the deploy lock (agent/handlers/git.ts): a deploy in progress keeps its cache
      (pod, fn) => deps.locks.run(`git:${pod}`, fn),
    ).then(
      (removed) => removed.length > 0 && log.info("host cache swept", { removed: removed.length }),
      (error: unknown) => log.warn("host cache sweep failed", { error: String(error) }),
    );
  void sweep();
  const sweeper = setInterval(() => void sweep(), config.hostCacheSweepMs);
  sweeper.unref();
  // The pods' log history (docs/logs.md "History"): their new lines, every PODHOST_LOG_HISTORY_INTERVAL_S.
  const logHistory = new LogHistory(docker, config.namePrefix, config.stateDir, deps.locks, log, { disk });
  let collecting = false;
  const collect = async () => {
    if (collecting) return;
    collecting = true;
    try {
      const prefixed = await docker.listContainers({ all: true, filters: prefixFilter(config.namePrefix) });
      // the pods' own containers (a deploy's build container carries the pod's label too)
      const pods = new Map(
        prefixed.flatMap((c) => {
          const pod = c.Labels[LABEL_POD];
          return pod && c.Names.includes(`/${podNames(config.namePrefix, pod).container}`)
            ? [[pod, c.State === "running"] as const]
            : [];
        }),
      );
      await collectAll(
        logHistory,
        [...pods].filter(([, running]) => running).map(([pod]) => pod),
        // asked again, not from the list: a pod created since it was taken keeps its history
        async (pod) =>
          pods.has(pod) ||
          Boolean(await inspectContainer(docker, podNames(config.namePrefix, pod).container)),
        log,
      );
    } catch (error) {
      log.warn("log history: collecting failed", { error: String(error) });
    } finally {
      collecting = false;
    }
  };
  const collector = setInterval(() => void collect(), config.logHistoryIntervalMs);
  collector.unref();
  log.info("agent started", { version: AGENT_VERSION, api: config.apiUrl, prefix: config.namePrefix });

  return {
    /** graceful stop: no new work, drain what runs, close the socket with 1000 */
    async stop() {
      log.info("agent stopping");
      await dispatcher.drain(SHUTDOWN_DRAIN_MS);
      stopWatching.abort();
      clearInterval(sweeper);
      clearInterval(collector);
      keeper.stop();
      egress.stop();
      await watch.stop();
      await ssh?.stop();
      await socket.stop();
    },
  };
}

const isEntryPoint = process.argv[1]?.endsWith("agent/main.ts") || process.argv[1]?.endsWith("agent/main.js");
if (isEntryPoint) {
  startAgent()
    .then((agent) => {
      let stopping = false;
      const shutdown = () => {
        if (stopping) return;
        stopping = true;
        void agent.stop().then(() => process.exit(0));
      };
      process.on("SIGTERM", shutdown);
      process.on("SIGINT", shutdown);
    })
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    });
}
