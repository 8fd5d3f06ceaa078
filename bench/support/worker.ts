/**
 * Starts the Worker locally (workerd through wrangler's `unstable_startWorker`) on a fresh, migrated
 * persist directory: for benches and e2e tests that talk to it over HTTP.
 *
 *   const worker = await startLocalWorker();
 *   await fetch(`${worker.url}/health`);
 *   await worker.stop();
 *
 * Database: migrations are applied programmatically — the same steps as `wrangler d1 migrations apply DB
 * --local --persist-to <dir>` (one Miniflare with the D1 binding; each pending file plus its `d1_migrations`
 * row in one batch), ~1.3 s instead of ~3.7 s for the CLI — into a template directory in the OS temp dir,
 * keyed by the D1 config and the migration files. Every later start copies the template (~20–100 ms).
 *
 * Source snapshot: wrangler 4.86's `unstable_startWorker` ignores `dev.watch: false` — its esbuild bundle
 * always watches the sources, and an edit anywhere under worker/ or shared/ rebuilds and restarts workerd in
 * the middle of a run (a new process, requests stalled, possibly half-edited code). By default the helper
 * therefore copies the repository (without node_modules, .git, .wrangler; ~1 MB, a few ms) to a temp dir
 * with a node_modules symlink and starts the Worker from that frozen copy.
 *
 * Direct address: `url` is wrangler's dev proxy (a ProxyWorker in its own workerd, which forwards every
 * request to the Worker's workerd and buffers nothing but costs a second hop: ~0.6-0.9 s on a 32 MB body
 * on two busy cores). `directUrl` is the Worker's own workerd, as the proxy itself reaches it (taken from
 * the dev env's `reloadComplete` event): the same Worker, bindings and storage without that hop. It
 * changes on every start, so whoever restarts the Worker on the same port keeps using `url`.
 */
import { createHash } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rename, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { unstable_readConfig, unstable_splitSqlQuery, unstable_startWorker } from "wrangler";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface StartLocalWorkerOptions {
  /** Wrangler config, relative to the repository root unless absolute. Default `wrangler.toml`. */
  config?: string;
  /** Use this persist directory as is (not copied, not deleted on stop, pending migrations applied). */
  persistDir?: string;
  /** `persistDir` came from `migratedPersistDir` (or a Worker already ran on it): nothing to apply. */
  migrated?: boolean;
  /** Plain-text vars that override `[vars]` / `.dev.vars` (e.g. a local Stripe double's host). */
  vars?: Record<string, string>;
  /**
   * Run from a frozen copy of the repository (see above). Default true; false runs the live sources, and
   * any edit during the run reloads the Worker. Ignored for a config outside the repository.
   */
  snapshot?: boolean;
  /** wrangler's own log level. Default "none": no banner, no request lines, no Worker console output. */
  logLevel?: "debug" | "info" | "log" | "warn" | "error" | "none";
  /** Listen on this port (default: a free one). A restart test reuses the port of the Worker it replaces. */
  port?: number;
  /**
   * Open the Worker's DevTools inspector on a free port of 127.0.0.1 (`wrangler dev --inspector-port`):
   * bench/soak reads the isolate's JS heap through it. Default off.
   */
  inspector?: boolean;
}

export interface LocalWorker {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /**
   * The Worker's own workerd without wrangler's proxy in front (see above), or `url` when it could not
   * be learned. Not stable across restarts.
   */
  directUrl: string;
  persistDir: string;
  /**
   * The sources the Worker was built from: the frozen copy (removed at stop) or the repository itself.
   * bench/support/deployed-worker.ts bundles the same sources as `wrangler deploy` would.
   */
  sourceDir: string;
  /** The wrangler config the Worker runs (inside `sourceDir` when it is in the repository). */
  configPath: string;
  /** The vars given in `options.vars` (over `[vars]` and `.dev.vars`). */
  vars: Record<string, string>;
  /** The inspector's base URL (`http://127.0.0.1:<port>`, its `/json` lists the Worker) when asked for. */
  inspectorUrl?: string;
  /**
   * With `inspector`, workerd's own inspector (`http://127.0.0.1:<port>`), which wrangler's sits in front
   * of: its `/json` lists every isolate of the process — the Worker's (its one session is wrangler's),
   * and the local runtime's own (D1, R2, KV, cache, Workflows engines).
   */
  runtimeInspectorUrl?: string;
  /** Milliseconds spent on the source snapshot + database, and on starting workerd until it serves. */
  timings: { prepareMs: number; startMs: number };
  /** Disposes the Worker and removes the temporary directories. Safe to call twice. */
  stop(): Promise<void>;
}

interface D1Target {
  binding: string;
  databaseId: string;
  migrationsDir: string;
  migrationsTable: string;
}

/** The fields of a `[[d1_databases]]` entry used here (wrangler's own Config type is not installed). */
interface D1Config {
  binding: string;
  database_id?: string;
  preview_database_id?: string;
  migrations_dir?: string;
  migrations_table?: string;
}

function d1Targets(configPath: string): D1Target[] {
  const config: { d1_databases: D1Config[] } = unstable_readConfig(
    { config: configPath },
    { hideWarnings: true },
  );
  const root = path.dirname(configPath);
  return config.d1_databases.map((db) => ({
    binding: db.binding,
    // wrangler dev keys local storage by the preview id when there is one, else the id, else the binding.
    databaseId: db.preview_database_id ?? db.database_id ?? db.binding,
    migrationsDir: path.resolve(root, db.migrations_dir ?? "migrations"),
    migrationsTable: db.migrations_table ?? "d1_migrations",
  }));
}

async function migrationFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  } catch {
    return [];
  }
}

/** Applies pending migrations of every D1 database of the config to `<persistDir>/v3/d1`. */
export async function applyMigrations(
  persistDir: string,
  configPath = path.join(REPO_ROOT, "wrangler.toml"),
): Promise<void> {
  const targets = d1Targets(path.resolve(REPO_ROOT, configPath));
  if (targets.length === 0) return;
  const mf = new Miniflare({
    modules: true,
    script: "",
    cf: false,
    d1Persist: path.join(persistDir, "v3", "d1"),
    d1Databases: Object.fromEntries(targets.map((t) => [t.binding, t.databaseId])),
  });
  try {
    for (const t of targets) {
      const db = await mf.getD1Database(t.binding);
      await db
        .prepare(
          `CREATE TABLE IF NOT EXISTS ${t.migrationsTable}(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT UNIQUE,
            applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)`,
        )
        .run();
      const done = await db.prepare(`SELECT name FROM ${t.migrationsTable}`).all<{ name: string }>();
      const applied = new Set(done.results.map((r) => r.name));
      for (const file of await migrationFiles(t.migrationsDir)) {
        if (applied.has(file)) continue;
        const sql = await readFile(path.join(t.migrationsDir, file), "utf8");
        // One batch = one transaction, like wrangler: a failing migration leaves nothing behind.
        await db.batch([
          ...unstable_splitSqlQuery(sql).map((s) => db.prepare(s)),
          db.prepare(`INSERT INTO ${t.migrationsTable} (name) VALUES (?)`).bind(file),
        ]);
      }
    }
  } finally {
    await mf.dispose();
  }
}

/**
 * A D1 database of a persist directory, as the Worker started on that directory will see it: to seed
 * rows before a start (or read them after a stop; never while a Worker runs on the directory).
 */
export async function openLocalD1(
  persistDir: string,
  binding = "DB",
  configPath = path.join(REPO_ROOT, "wrangler.toml"),
): Promise<{ d1: Awaited<ReturnType<Miniflare["getD1Database"]>>; dispose(): Promise<void> }> {
  const target = d1Targets(path.resolve(REPO_ROOT, configPath)).find((t) => t.binding === binding);
  if (!target) throw new Error(`no D1 binding ${binding} in ${configPath}`);
  const mf = new Miniflare({
    modules: true,
    script: "",
    cf: false,
    d1Persist: path.join(persistDir, "v3", "d1"),
    d1Databases: { [binding]: target.databaseId },
  });
  try {
    return { d1: await mf.getD1Database(binding), dispose: () => mf.dispose() };
  } catch (err) {
    await mf.dispose();
    throw err;
  }
}

/** Hash of what decides the migrated database: each D1 binding's identity and its migration files. */
async function schemaKey(configPath: string): Promise<string> {
  const hash = createHash("sha256");
  for (const t of d1Targets(configPath)) {
    hash.update(JSON.stringify([t.binding, t.databaseId, t.migrationsTable]));
    for (const file of await migrationFiles(t.migrationsDir)) {
      hash.update(file);
      hash.update(await readFile(path.join(t.migrationsDir, file)));
    }
  }
  return hash.digest("hex").slice(0, 16);
}

const exists = (p: string) =>
  readdir(p).then(
    () => true,
    () => false,
  );

const templates = new Map<string, Promise<string>>();

/**
 * A migrated persist directory to copy from, built once per schema key and shared between processes
 * through the OS temp dir (built aside and renamed into place: concurrent builders never see half of one).
 */
async function migratedTemplate(configPath: string): Promise<string> {
  const key = await schemaKey(configPath);
  let built = templates.get(key);
  if (!built) {
    built = (async () => {
      const dir = path.join(tmpdir(), `podhost-d1-template-${key}`);
      if (await exists(dir)) return dir;
      const staging = await mkdtemp(path.join(tmpdir(), "podhost-d1-staging-"));
      try {
        await applyMigrations(staging, configPath);
        await rename(staging, dir);
      } catch (err) {
        await rm(staging, { recursive: true, force: true });
        if (!(await exists(dir))) throw err; // else another process won the race: its template will do
      }
      return dir;
    })();
    templates.set(key, built);
    built.catch(() => templates.delete(key));
  }
  return built;
}

async function freshPersistDir(configPath: string): Promise<string> {
  const template = await migratedTemplate(configPath);
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-persist-"));
  // The -shm index is rebuilt from the WAL by the first connection; a copied one could only be stale.
  await cp(template, dir, { recursive: true, filter: (src) => !src.endsWith("-shm") });
  return dir;
}

/**
 * A persist directory of its own holding the migrated database (a copy of the template), for a caller
 * that keeps one database across Worker restarts and removes the directory itself.
 */
export function migratedPersistDir(configPath = path.join(REPO_ROOT, "wrangler.toml")): Promise<string> {
  return freshPersistDir(path.resolve(REPO_ROOT, configPath));
}

const SNAPSHOT_SKIP = new Set([".git", ".wrangler", ".podhost"]);

/**
 * Copies the repository's sources to a temp dir (the root's node_modules symlinked, every other
 * node_modules left out: the CLI's own is no part of the Worker, and an install under way there
 * would fail the copy); returns the dir.
 */
async function snapshotRepo(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-src-"));
  await cp(REPO_ROOT, dir, {
    recursive: true,
    filter: (src) => {
      const rel = path.relative(REPO_ROOT, src);
      const parts = rel.split(path.sep);
      return rel === "" || (!SNAPSHOT_SKIP.has(parts[0] ?? "") && !parts.includes("node_modules"));
    },
  });
  await symlink(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  return dir;
}

export async function startLocalWorker(options: StartLocalWorkerOptions = {}): Promise<LocalWorker> {
  // Miniflare would try to download https://workers.cloudflare.com/cf.json on each start (a warning and a
  // DNS failure when offline); its built-in placeholder `request.cf` is all local runs need.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";

  const t0 = performance.now();
  const cleanup: string[] = [];
  const removeTemps = () => Promise.all(cleanup.map((d) => rm(d, { recursive: true, force: true })));

  let configPath = path.resolve(REPO_ROOT, options.config ?? "wrangler.toml");
  const inRepo = !path.relative(REPO_ROOT, configPath).startsWith("..");
  let persistDir: string;
  let sourceDir = REPO_ROOT;
  try {
    if (options.snapshot !== false && inRepo) {
      const snapshot = await snapshotRepo();
      cleanup.push(snapshot);
      sourceDir = snapshot;
      configPath = path.join(snapshot, path.relative(REPO_ROOT, configPath));
    }
    if (options.persistDir) {
      persistDir = path.resolve(options.persistDir);
      if (!options.migrated) await applyMigrations(persistDir, configPath);
    } else {
      persistDir = await freshPersistDir(configPath);
      cleanup.push(persistDir);
    }
  } catch (err) {
    await removeTemps();
    throw err;
  }
  const t1 = performance.now();

  const worker = await unstable_startWorker({
    config: configPath,
    bindings: options.vars
      ? Object.fromEntries(
          Object.entries(options.vars).map(([k, value]) => [k, { type: "plain_text" as const, value }]),
        )
      : undefined,
    dev: {
      server: { hostname: "127.0.0.1", port: options.port ?? 0 },
      inspector: options.inspector ? { hostname: "127.0.0.1", port: 0 } : false,
      persist: persistDir,
      watch: false,
      logLevel: options.logLevel ?? "none",
    },
  });
  // The proxy learns the Worker's own address from the runtime's `reloadComplete` on the dev env's bus,
  // which comes after startWorker returned (bundling is still under way then); listen in on it.
  let direct: string | undefined;
  let runtimeInspector: string | undefined;
  const devEnv = worker.raw;
  const dispatch = devEnv.dispatch.bind(devEnv);
  devEnv.dispatch = (event) => {
    if (event.type === "reloadComplete") {
      const { protocol, hostname, port } = event.proxyData.userWorkerUrl;
      direct = `${protocol}//${hostname}:${port}`;
      const inspector = event.proxyData.userWorkerInspectorUrl;
      if (inspector) runtimeInspector = `http://${inspector.hostname}:${inspector.port}`;
    }
    dispatch(event);
  };
  let url: URL;
  let inspectorUrl: URL | undefined;
  try {
    await worker.ready;
    url = await worker.url;
    if (options.inspector) inspectorUrl = await worker.inspectorUrl;
    // `ready` means the proxy in front listens; requests would queue until workerd has loaded the Worker.
    // Wait for that too (what wrangler itself awaits), so `startMs` is the real cost of a start.
    await new Promise<void>((resolve, reject) => {
      worker.raw.once("error", reject);
      worker.raw.proxy.localServerReady.promise.then(() => {
        worker.raw.off("error", reject);
        resolve();
      }, reject);
    });
  } catch (err) {
    await worker.dispose().catch(() => {});
    await removeTemps();
    throw err;
  }
  const t2 = performance.now();

  let stopped: Promise<void> | undefined;
  return {
    url: url.origin,
    directUrl: direct ?? url.origin,
    persistDir,
    sourceDir: inRepo ? sourceDir : path.dirname(configPath),
    configPath,
    vars: { ...options.vars },
    inspectorUrl: inspectorUrl ? `http://${inspectorUrl.host}` : undefined,
    runtimeInspectorUrl: options.inspector ? runtimeInspector : undefined,
    timings: { prepareMs: t1 - t0, startMs: t2 - t1 },
    stop() {
      stopped ??= (async () => {
        try {
          await worker.dispose();
        } finally {
          await removeTemps();
        }
      })();
      return stopped;
    },
  };
}
