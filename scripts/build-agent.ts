/**
 * `npm run build:agent`: the agent as one plain-JavaScript file, dist/agent/main.js, run with
 * `node dist/agent/main.js` in production, by `npm start` and by the tests' agent launcher. No loader
 * at run time: under `node --import tsx` the agent paid for the TypeScript loader and a module graph of
 * hundreds of files (104–118 MB RSS); one bundle is parsed once and most of it lazily.
 *
 * esbuild bundles agent/ and shared/ with their npm dependencies, except the packages that load
 * native code or files next to their own (ssh2 loads its `sshcrypto.node` binding and `cpu-features`
 * relative to itself): those stay in node_modules and are imported from there. dockerode's BuildKit
 * session (gRPC + protobuf, some 10 MB of heap) is only reached by `buildImage` with a session, which
 * the agent never calls: it is bundled but evaluated on first use (./build-agent-plugins.ts).
 *
 * The bundle is dist/agent/agent.js; dist/agent/main.js, the file node runs, is a few lines that turn
 * on Node's compile cache (`module.enableCompileCache`, in dist/agent/compile-cache/) and then import
 * it: from the second start on, V8 reads the bundle's bytecode from the cache instead of parsing and
 * compiling its ~1 MB again (~60 ms less CPU at start and ~3 MB less RSS, bench/README.md). Node
 * checks each cache entry against the source's hash and its own version, so a rebuilt bundle or a
 * new Node only misses once; a cache that cannot be written (a read-only directory) costs nothing.
 *
 * Idempotent and quick (~0.3 s): the bundle is rebuilt only when a source or the lockfile is newer
 * than it, and written to a temporary name first, then renamed (the bundle, then its entry), so an
 * agent starting meanwhile never reads half a file.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readdir, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import {
  builtinsByRequire,
  lazyRequires,
  quietDockerModem,
  shareEsmViews,
  zodWithoutLocales,
} from "./build-agent-plugins";

export const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
/** the file node runs: the bundle's entry (AGENT_ENTRY_SOURCE) */
export const AGENT_BUNDLE = path.join(REPO_ROOT, "dist", "agent", "main.js");
/** the bundle itself, imported by its entry */
const AGENT_CODE = path.join(REPO_ROOT, "dist", "agent", "agent.js");
/**
 * dist/agent/main.js: the compile cache on, then the bundle (whose own entry-point check looks for
 * `agent/main.js` in argv, which this file is). The cache is written by Node at exit and, for an
 * agent that runs for months and may be killed, once its start is done: by then its start's
 * functions are compiled and go into the cache too.
 */
const AGENT_ENTRY_SOURCE = `// written by scripts/build-agent.ts: the agent's entry
import module from "node:module";
try {
  module.enableCompileCache?.(new URL("./compile-cache/", import.meta.url).pathname);
} catch {}
await import("./agent.js");
setTimeout(() => {
  try {
    module.flushCompileCache?.();
  } catch {}
}, 15_000).unref();
`;
/**
 * Node's flags for the agent: V8 optimizing for size. Its young generation stays at its smallest
 * (1 MB semi-spaces; `--max-semi-space-size=8`, the flag before, let it grow to 4–8 MB while the
 * bundle loaded and the metrics ticks ran) and its old generation grows in smaller steps, with more
 * frequent full collections of a heap that is ~13 MB live: with 50 pods 72–74 MB of RSS instead of
 * 79–83 MB (the V8 heap's resident pages 25.6 → 15.9 MB; bench/README.md). The cost the 8 MB
 * semi-spaces were chosen against (a 32 MB upload through Node's HTTP client, ~60 ms more of the
 * agent's CPU with 1 MB) is gone with that client: an upload is piped from curl, and neither a pipe of
 * 256 MB nor an SSH channel taking 64 MB through ssh2 costs measurably more CPU with this flag
 * (medians of 5–7 runs each, within the runs' spread; docs/decisions/compiled-agent.md).
 *
 * The collector on the main thread only (`--single-threaded-gc`): every socket read is a new 64 KiB
 * buffer and ssh2 copies most packets once more, so a bulk SSH copy makes ~200 MB of short-lived
 * buffers per 100 MB, and V8 answers that external memory with full collections whose marking runs
 * on helper threads beside the main one. On a busy 2-core host those threads cost more than they
 * save: the gateway's CPU per 100 MB `scp` 790–1580 → 480–770 ms, per 100 MB into `cat` 550–760 →
 * 240–510 ms (interleaved runs, load ~11; bench/README.md, bench/ssh).
 *
 * No optimizing compiler above the baseline (`--max-opt=2`; Node 22 leaves Maglev off, so that is
 * Sparkplug): TurboFan's own code in the node binary, ~5.5 MB of resident pages, is paged in the
 * first time any function gets hot, and in the agent something always does (Node's task queues and
 * event emitters within seconds, zod's constructors while the protocol loads). Without it the agent
 * with 50 pods holds 66–67 MB instead of 72–73 MB (the binary's code pages 25.1 → 19.6 MB). The agent
 * is glue around the engine, nginx and child processes, whose hot paths (hashing, ciphers, JSON)
 * are native: its CPU per 100 MB through the SSH gateway was measured alike (bench/README.md).
 */
export const AGENT_NODE_FLAGS = ["--optimize-for-size", "--single-threaded-gc", "--max-opt=2"];

/**
 * Environment the agent runs with: one glibc malloc arena. By default every thread that allocates
 * (libuv's pool: file system, DNS, crypto) gets an arena of its own, whose freed memory mostly stays
 * resident; measured with 50 pods, ~2 MB of RSS less with one.
 */
export const AGENT_ENV: Record<string, string> = { MALLOC_ARENA_MAX: "1" };

let agentNodePath: string | undefined;

/**
 * The node binary the agent runs on: Node 22 LTS or later (docs/hosts.md, "The agent's Node"), the
 * machine's own when it is new enough, else the one scripts/host/ensure-agent-node.sh installs from
 * the npm registry into the cache (a no-op once there). Asked once per process. Only the agent runs
 * on it: this process (tsx, vitest, wrangler) stays on the machine's Node.
 */
export function agentNode(): string {
  agentNodePath ??= execFileSync("bash", [path.join(REPO_ROOT, "scripts", "host", "ensure-agent-node.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  return agentNodePath;
}

/** argv that runs the built agent: `[agent's node, ...flags, dist/agent/main.js]` (with AGENT_ENV) */
export function agentCommand(): [string, string[]] {
  return [agentNode(), [...AGENT_NODE_FLAGS, AGENT_BUNDLE]];
}

/** what the bundle is made of: a change to any of these rebuilds it */
const SOURCES = [
  "agent",
  "shared",
  "package-lock.json",
  "scripts/build-agent.ts",
  "scripts/build-agent-plugins.ts",
];
/** loaded from node_modules at run time (native bindings, files read relative to the package) */
const EXTERNAL = ["ssh2", "cpu-features", "@grpc/grpc-js", "@grpc/proto-loader", "protobufjs"];

async function newestMtime(entry: string): Promise<number> {
  const info = await stat(entry).catch(() => null);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const name of await readdir(entry))
    newest = Math.max(newest, await newestMtime(path.join(entry, name)));
  return newest;
}

/** true when the bundle is missing or older than a source */
async function stale(): Promise<boolean> {
  const built = await stat(AGENT_BUNDLE).catch(() => null);
  if (!built || !(await stat(AGENT_CODE).catch(() => null))) return true;
  const sources = await Promise.all(SOURCES.map((s) => newestMtime(path.join(REPO_ROOT, s))));
  return Math.max(...sources) > built.mtimeMs;
}

/** Builds dist/agent/main.js when it is missing or stale; answers the bundle's path. */
export async function buildAgent(opts: { force?: boolean } = {}): Promise<string> {
  if (!opts.force && !(await stale())) return AGENT_BUNDLE;
  const dir = path.dirname(AGENT_BUNDLE);
  await mkdir(dir, { recursive: true });
  const result = await build({
    entryPoints: [path.join(REPO_ROOT, "agent", "main.ts")],
    bundle: true,
    platform: "node",
    target: "node22",
    format: "esm",
    write: false,
    outfile: AGENT_CODE,
    external: EXTERNAL,
    plugins: [builtinsByRequire, lazyRequires, quietDockerModem, zodWithoutLocales],
    loader: { ".json": "json" },
    // CommonJS dependencies inside an ES module bundle still call `require` for Node's built-ins.
    banner: {
      js: 'import { createRequire as __podhostCreateRequire } from "node:module";\nconst require = __podhostCreateRequire(import.meta.url);',
    },
    legalComments: "none",
    // Whitespace and syntax only (names are kept for stack traces): the source V8 holds on to is
    // ~1.1 MB instead of ~1.6 MB, ~2 MB less RSS; mangling names would save another 0.3 MB.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "warning",
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error("esbuild produced no output");
  // Unique temporary names, renamed over the files: concurrent builds and starting agents are safe.
  // The entry last: its time is the build's (stale() compares it).
  for (const [file, contents] of [
    [AGENT_CODE, shareEsmViews(output.text)],
    [AGENT_BUNDLE, AGENT_ENTRY_SOURCE],
  ] as const) {
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, contents);
    await rename(tmp, file);
  }
  return AGENT_BUNDLE;
}

const isEntryPoint = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntryPoint) {
  const started = performance.now();
  buildAgent({ force: process.argv.includes("--force") })
    .then((file) => {
      const ms = Math.round(performance.now() - started);
      console.log(`agent: ${path.relative(REPO_ROOT, file)} (${ms} ms)`);
    })
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    });
}
