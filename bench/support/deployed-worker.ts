/**
 * The Worker in the shape a deployment runs it, beside a LocalWorker (bench/support/worker.ts) and on
 * its database: for a bench that must judge the Worker's own cost, not the dev server's.
 *
 *   const deployed = await startDeployedShapeWorker(stack.worker);
 *   await fetch(`${deployed.url}/`, { headers: { host: "shop.pods.localhost" } });
 *   await deployed.stop();
 *
 * What `wrangler dev` (`npm start`, `unstable_startWorker`) adds around a Worker, and no deployment
 * has (Cloudflare runs the deployed bundle in workerd, its front line straight into the Worker):
 *   - the dev bundle: wrangler wraps the entry in two middlewares (one drains every request body,
 *     one turns a thrown error into JSON for its error page) and injects a `fetch` wrapper that
 *     checks each outbound URL's port;
 *   - Miniflare's entry worker: the Worker's socket is Miniflare's own, whose worker dispatches each
 *     request to the user Worker through a service binding and re-wraps the response;
 *   - Miniflare's CF-Connecting-IP stripping worker: the Worker's global outbound is a second worker
 *     that removes that header from every `fetch` (workers-sdk#7924) before the network;
 *   - at `npm start`'s address, wrangler's ProxyWorker in its own workerd in front of all that.
 *
 * This Worker has none of them: the bundle `wrangler deploy` uploads (`wrangler deploy --dry-run
 * --outdir`, from the LocalWorker's own sources), the bindings wrangler derives from the same config
 * (`unstable_getMiniflareWorkerOptions`) with the LocalWorker's vars over them, served by Miniflare's
 * `unsafeDirectSockets` (a workerd socket whose service is the Worker itself) with
 * `stripCfConnectingIp: false` (its `fetch` goes to the network directly).
 *
 * State: its D1 is a copy of the LocalWorker's D1 files taken when it starts (`copyD1` below). A
 * copy and not the files themselves: two workerd processes on one D1 file made the LocalWorker's
 * own writes fail now and then (SQLITE_BUSY_SNAPSHOT, once in ~33,000 reads from the second
 * process), and a bench must not disturb the stack it measures. Start it once the rows it needs
 * are written (the pod running, for the edge). Its KV, R2, Durable Objects and Workflows are in
 * memory and start empty (two processes must not run one Durable Object or Workflow engine
 * either). Use it for what reads D1 only (the edge router: docs/edge.md).
 */
import { execFile } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { Miniflare, type WorkerOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import type { LocalWorker } from "./worker";

const run = promisify(execFile);

export interface DeployedShapeWorker {
  /** Base URL of the Worker's own socket (no entry worker), e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Milliseconds spent bundling (`wrangler deploy --dry-run`) and copying D1, and starting workerd. */
  timings: { bundleMs: number; startMs: number };
  stop(): Promise<void>;
}

/**
 * Copies a persist directory's D1 files: in each directory the write-ahead logs first, then the
 * databases (without the shared-memory index, rebuilt from the log on open). Copied that way, a
 * checkpoint during the copy moves into the database only pages the copied log holds too, unless
 * the log also grew and was checkpointed again within those milliseconds (SQLite checkpoints every
 * ~1,000 pages of log; nothing here writes that much): then the copy could mix states, and what it
 * misses shows as a request the edge does not route.
 */
async function copyD1(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  const entries = await readdir(from, { withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && !e.name.endsWith("-shm")).map((e) => e.name);
  const logsFirst = [...files.filter((f) => f.endsWith("-wal")), ...files.filter((f) => !f.endsWith("-wal"))];
  for (const f of logsFirst) await copyFile(path.join(from, f), path.join(to, f));
  for (const e of entries) if (e.isDirectory()) await copyD1(path.join(from, e.name), path.join(to, e.name));
}

/** The deploy bundle's files as Miniflare modules: the entry as an ES module, the rest as wrangler's Text rule made them. */
async function bundleModules(outdir: string): Promise<NonNullable<WorkerOptions["modules"]>> {
  const files = (await readdir(outdir)).filter((f) => f !== "index.js" && /\.(js|css)$/.test(f));
  return [
    { type: "ESModule" as const, path: path.join(outdir, "index.js") },
    ...files.map((f) => ({ type: "Text" as const, path: path.join(outdir, f) })),
  ];
}

export async function startDeployedShapeWorker(worker: LocalWorker): Promise<DeployedShapeWorker> {
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-deployed-shape-"));
  const outdir = path.join(dir, "bundle");
  const d1 = path.join(dir, "d1");
  let mf: Miniflare | undefined;
  try {
    const t0 = performance.now();
    await run(
      process.execPath,
      [
        path.join(worker.sourceDir, "node_modules", "wrangler", "bin", "wrangler.js"),
        "deploy",
        "--dry-run",
        "--outdir",
        outdir,
        "--config",
        worker.configPath,
      ],
      {
        cwd: worker.sourceDir,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "error" },
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    await copyD1(path.join(worker.persistDir, "v3", "d1"), d1);
    const t1 = performance.now();
    const { workerOptions } = unstable_getMiniflareWorkerOptions(worker.configPath);
    // the bundle's modules are listed as they are (wrangler already applied the config's rules)
    const { modulesRules: _rules, ...bindings } = workerOptions;
    mf = new Miniflare({
      host: "127.0.0.1",
      port: 0,
      d1Persist: d1,
      // the Worker's console output (its request log lines) dropped, as the LocalWorker's is by default;
      // warnings and errors still reach stderr
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        stdout.resume();
        stderr.pipe(process.stderr);
      },
      workers: [
        {
          ...bindings,
          name: "podhost-deployed-shape",
          modulesRoot: outdir,
          modules: await bundleModules(outdir),
          bindings: { ...bindings.bindings, ...worker.vars },
          unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
          stripCfConnectingIp: false,
        },
      ],
    });
    await mf.ready;
    const url = await mf.unsafeGetDirectURL("podhost-deployed-shape");
    const t2 = performance.now();
    const started = mf;
    let stopped: Promise<void> | undefined;
    return {
      url: url.origin,
      timings: { bundleMs: t1 - t0, startMs: t2 - t1 },
      stop() {
        stopped ??= (async () => {
          try {
            await started.dispose();
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        })();
        return stopped;
      },
    };
  } catch (err) {
    await mf?.dispose().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
