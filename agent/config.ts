import { isIPv4 } from "node:net";
import { z } from "zod";
import type { PresetSlug } from "../shared/catalog";
import type { ServiceType } from "../shared/protocol/services";
import { DOCKER_RUNC_ROOT } from "./docker/runc";

/**
 * The control plane's address carries the host's token and every command the host runs: over
 * plain http anyone on the path could read the token and speak for the control plane. So https,
 * except to this machine itself (a loopback address: `npm start`, the tests), where nothing crosses
 * a network. The URL parser has already normalized the host (`127.1` is `127.0.0.1`, `[0::1]` is
 * `[::1]`, names are lowercase).
 */
function checkApiUrl(raw: string, ctx: z.RefinementCtx) {
  const url = new URL(raw);
  if (url.protocol === "https:") return;
  if (url.protocol !== "http:") {
    ctx.addIssue({ code: "custom", message: `must be an https:// URL, not ${url.protocol}//` });
    return;
  }
  const host = url.hostname;
  const loopback = host === "localhost" || host === "[::1]" || (isIPv4(host) && host.startsWith("127."));
  if (!loopback) {
    ctx.addIssue({
      code: "custom",
      message: `plain http:// is refused for ${host}: the host token and every command would cross the network in clear; use https://, or http:// only to a loopback address (127.0.0.0/8, ::1, localhost)`,
    });
  }
}

/**
 * The agent's configuration, read once from the environment at the entry point. Everything has a
 * working default except the control plane's address and the host token, which only the connection
 * needs (handlers and their tests run without them). Built for each read and not kept: ~200 schema
 * objects held for the agent's life would be ~0.3 MB of its heap for one read at its start.
 */
function envSchema() {
  return z.object({
    PODHOST_API_URL: z.url().superRefine(checkApiUrl).optional(),
    PODHOST_AGENT_TOKEN: z.string().min(1).optional(),
    PODHOST_STATE_DIR: z.string().min(1).default("/var/lib/podhost-agent"),
    PODHOST_IMAGE_STATIC: z.string().min(1).default("podhost/static:latest"),
    PODHOST_IMAGE_PHP: z.string().min(1).default("podhost/php:latest"),
    PODHOST_IMAGE_NODEJS: z.string().min(1).default("podhost/nodejs:latest"),
    PODHOST_IMAGE_PYTHON: z.string().min(1).default("podhost/python:latest"),
    /** the database service images (images/README.md "Service images") */
    PODHOST_SERVICE_IMAGE_POSTGRESQL: z.string().min(1).default("podhost/postgresql:14"),
    PODHOST_SERVICE_IMAGE_MYSQL: z.string().min(1).default("podhost/mariadb:10.11"),
    PODHOST_SERVICE_IMAGE_REDIS: z.string().min(1).default("podhost/redis:7"),
    PODHOST_INGRESS_LISTEN: z
      .string()
      .regex(/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]|\*):\d{1,5}$/, "must be <ip>:<port>")
      .default("127.0.0.1:8080"),
    PODHOST_DOCKER_SOCKET: z.string().min(1).default("/var/run/docker.sock"),
    /** the address every pod's SSH listener binds (each pod has its own port, from its spec) */
    PODHOST_SSH_LISTEN_HOST: z
      .string()
      .regex(/^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]+)$/, "must be an IPv4 or IPv6 address")
      .default("0.0.0.0"),
    /**
     * runc's state root of the engine's containers: file operations, ZIP unpacking and SSH sessions
     * without a terminal (scp, sftp, rsync) run through `runc exec` there, skipping the engine's copy
     * of every byte; empty: never
     */
    PODHOST_RUNC_ROOT: z.string().default(DOCKER_RUNC_ROOT),
    /** an SSH connection with no data in either direction for this long is closed */
    PODHOST_SSH_IDLE_TIMEOUT_S: z.coerce.number().int().positive().default(1800),
    /** how often running pods are sampled (metrics) and their apps checked (health diagnosis) */
    PODHOST_METRICS_INTERVAL_S: z.coerce.number().int().min(1).max(3600).default(60),
    /** how often a failed (or dead) ingress is tried again */
    PODHOST_INGRESS_CHECK_S: z.coerce.number().int().min(1).max(3600).default(10),
    /** how often the pod egress rules are checked (and put back when something removed them) */
    PODHOST_EGRESS_CHECK_S: z.coerce.number().int().min(1).max(3600).default(30),
    /**
     * the btrfs (quotas on) where each pod's home is a subvolume limited to its plan's disk
     * (scripts/host/ensure-pod-disk.sh makes it); the agent refuses to start when it is not one.
     * Empty: homes are plain engine volumes without a limit (a pod can fill the host's disk)
     */
    PODHOST_POD_DISK_ROOT: z.string().default("/var/lib/podhost/pod-disk"),
    /**
     * what the host fetches for others (repository lookups, deploy caches, coding agents' trees): a
     * subvolume of its own on the pod disk, limited to this (agent/disk/host-cache.ts), swept this often
     */
    PODHOST_HOST_CACHE_MB: z.coerce.number().int().min(16).max(1048576).default(8192),
    PODHOST_HOST_CACHE_SWEEP_S: z.coerce.number().int().min(10).max(86400).default(3600),
    /** how often the pods' app, web and error logs are collected into their history (docs/logs.md) */
    PODHOST_LOG_HISTORY_INTERVAL_S: z.coerce.number().int().min(1).max(86400).default(300),
    /** git deployments (docs/git.md): a fetch's wall clock, and the most it may download */
    PODHOST_GIT_TIMEOUT_S: z.coerce.number().int().min(5).max(3600).default(300),
    PODHOST_GIT_MAX_FETCH_MB: z.coerce.number().int().min(1).max(65536).default(512),
    /**
     * "true": plain http:// repositories on a loopback host may be fetched (`npm start`, the tests: a
     * git server on this machine), as the Worker's ALLOW_HTTP_GIT_LOOPBACK; https:// to loopback and
     * every other inward address stay refused (shared/git/repo-url.ts)
     */
    PODHOST_ALLOW_HTTP_GIT_LOOPBACK: z.enum(["true", "false"]).default("false"),
    /** repository lookups (`repo.branches`, `repo.inspect`) in progress at once; past it, 429 */
    PODHOST_GIT_LOOKUPS_AT_ONCE: z.coerce.number().int().min(1).max(64).default(4),
    /** the most a commit's tree may unpack to (a small pack can hold huge, well-compressed files) */
    PODHOST_GIT_MAX_TREE_MB: z.coerce.number().int().min(1).max(65536).default(2048),
    /**
     * a deploy's build container: its own limits, apart from the serving pod's. Its memory is the
     * pod's own (its plan's, agent/git/build.ts `buildLimitsFor`): this is only for a pod container
     * without a limit; the time limit is lowered to what is left of the pod's daily build budget
     */
    PODHOST_BUILD_MEMORY_MB: z.coerce.number().int().min(64).max(65536).default(1024),
    PODHOST_BUILD_CPUS: z.coerce.number().min(0.1).max(64).default(2),
    PODHOST_BUILD_PIDS: z.coerce.number().int().min(32).max(65536).default(512),
    PODHOST_BUILD_TIMEOUT_S: z.coerce.number().int().min(5).max(7200).default(900),
    /** how long a new release may take to listen on its port before the deploy fails */
    PODHOST_START_TIMEOUT_S: z.coerce.number().int().min(1).max(600).default(60),
    /** names every container, volume and network; tests use a unique one so they never touch others */
    /**
     * Coding agents (docs/coding-agents.md): the npm registry the host fetches them from (unset:
     * npm's own setting, `npm_config_registry` or https://registry.npmjs.org), the npm it runs, how
     * long one fetch may take, the most one agent's tree may unpack to, and the most the host keeps
     * of them (least recently used trees go first)
     */
    PODHOST_NPM_REGISTRY: z.url().optional(),
    PODHOST_NPM: z.string().min(1).default("npm"),
    PODHOST_CODING_AGENTS_TIMEOUT_S: z.coerce.number().int().min(10).max(7200).default(600),
    PODHOST_CODING_AGENTS_MAX_MB: z.coerce.number().int().min(1).max(65536).default(1024),
    PODHOST_CODING_AGENTS_CACHE_MB: z.coerce.number().int().min(1).max(1048576).default(4096),
    PODHOST_NAME_PREFIX: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,30}$/, "lowercase letters, digits and dashes")
      .default("podhost"),
  });
}

export interface AgentConfig {
  apiUrl: string | undefined;
  agentToken: string | undefined;
  stateDir: string;
  images: Record<PresetSlug, string>;
  /** the image of each database service type */
  serviceImages: Record<ServiceType, string>;
  ingressListen: string;
  dockerSocket: string;
  namePrefix: string;
  sshListenHost: string;
  sshIdleTimeoutMs: number;
  /** null: SSH sessions always through the engine's exec */
  runcRoot: string | null;
  metricsIntervalMs: number;
  ingressCheckMs: number;
  egressCheckMs: number;
  /** null: pods' homes carry no disk limit */
  podDiskRoot: string | null;
  /**
   * where the host's fetch caches live (git lookups and deploy caches, coding agents' trees): the
   * host cache subvolume once the agent made it (agent/disk/host-cache.ts), else the state dir
   */
  cacheDir: string;
  hostCacheBytes: number;
  hostCacheSweepMs: number;
  logHistoryIntervalMs: number;
  git: GitConfig;
  codingAgents: CodingAgentsConfig;
}

/** Coding agents' host side (agent/coding-agents/). */
export interface CodingAgentsConfig {
  /** null: npm's own registry setting */
  registry: string | null;
  npm: string;
  fetchTimeoutMs: number;
  maxTreeBytes: number;
  maxCacheBytes: number;
}

/** Git deployments' limits (agent/git/). */
export interface GitConfig {
  fetchTimeoutMs: number;
  maxFetchBytes: number;
  maxTreeBytes: number;
  /** plain http:// to a loopback host may be fetched (local development, tests) */
  allowHttpLoopback: boolean;
  /** repository lookups in progress at once (agent/git/lookups.ts) */
  lookupsAtOnce: number;
  build: { memoryBytes: number; nanoCpus: number; pids: number; timeoutMs: number };
  startTimeoutMs: number;
}

/** Parse the environment; throws a readable error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  const parsed = envSchema().safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid agent configuration:\n  ${lines.join("\n  ")}`);
  }
  const e = parsed.data;
  return {
    apiUrl: e.PODHOST_API_URL,
    agentToken: e.PODHOST_AGENT_TOKEN,
    stateDir: e.PODHOST_STATE_DIR,
    images: {
      static: e.PODHOST_IMAGE_STATIC,
      php: e.PODHOST_IMAGE_PHP,
      nodejs: e.PODHOST_IMAGE_NODEJS,
      python: e.PODHOST_IMAGE_PYTHON,
    },
    serviceImages: {
      postgresql: e.PODHOST_SERVICE_IMAGE_POSTGRESQL,
      mysql: e.PODHOST_SERVICE_IMAGE_MYSQL,
      redis: e.PODHOST_SERVICE_IMAGE_REDIS,
    },
    ingressListen: e.PODHOST_INGRESS_LISTEN,
    dockerSocket: e.PODHOST_DOCKER_SOCKET,
    namePrefix: e.PODHOST_NAME_PREFIX,
    sshListenHost: e.PODHOST_SSH_LISTEN_HOST,
    sshIdleTimeoutMs: e.PODHOST_SSH_IDLE_TIMEOUT_S * 1000,
    runcRoot: e.PODHOST_RUNC_ROOT || null,
    metricsIntervalMs: e.PODHOST_METRICS_INTERVAL_S * 1000,
    ingressCheckMs: e.PODHOST_INGRESS_CHECK_S * 1000,
    egressCheckMs: e.PODHOST_EGRESS_CHECK_S * 1000,
    podDiskRoot: e.PODHOST_POD_DISK_ROOT || null,
    cacheDir: e.PODHOST_STATE_DIR,
    hostCacheBytes: e.PODHOST_HOST_CACHE_MB * 1024 * 1024,
    hostCacheSweepMs: e.PODHOST_HOST_CACHE_SWEEP_S * 1000,
    logHistoryIntervalMs: e.PODHOST_LOG_HISTORY_INTERVAL_S * 1000,
    git: {
      fetchTimeoutMs: e.PODHOST_GIT_TIMEOUT_S * 1000,
      maxFetchBytes: e.PODHOST_GIT_MAX_FETCH_MB * 1024 * 1024,
      maxTreeBytes: e.PODHOST_GIT_MAX_TREE_MB * 1024 * 1024,
      allowHttpLoopback: e.PODHOST_ALLOW_HTTP_GIT_LOOPBACK === "true",
      lookupsAtOnce: e.PODHOST_GIT_LOOKUPS_AT_ONCE,
      build: {
        memoryBytes: e.PODHOST_BUILD_MEMORY_MB * 1024 * 1024,
        nanoCpus: Math.round(e.PODHOST_BUILD_CPUS * 1e9),
        pids: e.PODHOST_BUILD_PIDS,
        timeoutMs: e.PODHOST_BUILD_TIMEOUT_S * 1000,
      },
      startTimeoutMs: e.PODHOST_START_TIMEOUT_S * 1000,
    },
    codingAgents: {
      registry: e.PODHOST_NPM_REGISTRY ?? null,
      npm: e.PODHOST_NPM,
      fetchTimeoutMs: e.PODHOST_CODING_AGENTS_TIMEOUT_S * 1000,
      maxTreeBytes: e.PODHOST_CODING_AGENTS_MAX_MB * 1024 * 1024,
      maxCacheBytes: e.PODHOST_CODING_AGENTS_CACHE_MB * 1024 * 1024,
    },
  };
}

/** The connection layer's view: the same config with the two connection settings required. */
export function requireConnection(config: AgentConfig): AgentConfig & { apiUrl: string; agentToken: string } {
  const { apiUrl, agentToken } = config;
  if (!apiUrl || !agentToken) {
    throw new Error("invalid agent configuration: PODHOST_API_URL and PODHOST_AGENT_TOKEN are required");
  }
  return { ...config, apiUrl, agentToken };
}
