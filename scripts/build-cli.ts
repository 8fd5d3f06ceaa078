/**
 * `npx tsx scripts/build-cli.ts` (proposed npm script: `build:cli`): the CLI (cli/) as plain
 * JavaScript in cli/dist/, the `podhost` bin of cli/package.json (and of the repository's root, for
 * `npx podhost` here). Like the agent's bundle (scripts/build-agent.ts) it has no loader at run time;
 * unlike it, it is split: `podhost.cjs` is the entry, and each command's module and the libraries only
 * it uses (the archive code of `deploy`, the prompts of `pods rm`) are chunks loaded when that
 * command runs, so `podhost --version` parses one small file and `podhost pods ls` a few.
 *
 * Rebuilt only when a source is newer than the entry (or with --force); written to a temporary
 * directory, then renamed over cli/dist, so a CLI starting meanwhile never reads a half-written file.
 *
 * The entry is CommonJS (`podhost.cjs`): Node starts a CommonJS file without its ES module loader, so
 * `podhost --version` costs what `node -e 0` does; the command table (`program.js`) and its chunks are
 * ES modules, since esbuild splits only those, and the entry reaches them with `import()`.
 */
import { chmod, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { zodWithoutLocales } from "./build-agent-plugins";

export const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
const CLI_DIR = path.join(REPO_ROOT, "cli");
export const CLI_BUNDLE = path.join(CLI_DIR, "dist", "podhost.cjs");

/** what the bundle is made of: a change to any of these rebuilds it */
const SOURCES = [
  "cli/src",
  "cli/package.json",
  "agent/inside/dotenv.ts",
  "agent/docker/spec-files.ts",
  "scripts/build-cli.ts",
];

async function newestMtime(entry: string): Promise<number> {
  const info = await stat(entry).catch(() => null);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const name of await readdir(entry))
    newest = Math.max(newest, await newestMtime(path.join(entry, name)));
  return newest;
}

async function stale(): Promise<boolean> {
  const built = await stat(CLI_BUNDLE).catch(() => null);
  if (!built) return true;
  const sources = await Promise.all(SOURCES.map((s) => newestMtime(path.join(REPO_ROOT, s))));
  return Math.max(...sources) > built.mtimeMs;
}

/** Builds cli/dist/ when it is missing or stale; answers the entry's path. */
export async function buildCli(opts: { force?: boolean } = {}): Promise<string> {
  if (!opts.force && !(await stale())) return CLI_BUNDLE;
  const { version } = JSON.parse(await readFile(path.join(CLI_DIR, "package.json"), "utf8")) as {
    version: string;
  };
  const tmp = path.join(CLI_DIR, `.dist.${process.pid}.${Date.now()}`);
  const common = {
    bundle: true,
    platform: "node",
    target: "node20",
    define: { PODHOST_CLI_VERSION: JSON.stringify(version) },
    legalComments: "none",
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "warning",
  } as const;
  await build({
    ...common,
    entryPoints: { program: path.join(CLI_DIR, "src", "program.ts") },
    splitting: true,
    format: "esm",
    outdir: tmp,
    chunkNames: "chunks/[name]-[hash]",
    plugins: [zodWithoutLocales],
    // CommonJS dependencies (commander) call `require` for Node's built-ins inside ES module chunks.
    banner: {
      js: 'import { createRequire as __podhostCreateRequire } from "node:module";\nconst require = __podhostCreateRequire(import.meta.url);',
    },
  });
  await build({
    ...common,
    entryPoints: [path.join(CLI_DIR, "src", "main.ts")],
    format: "cjs",
    outfile: path.join(tmp, path.basename(CLI_BUNDLE)),
    external: ["./program.js"],
    banner: { js: "#!/usr/bin/env node" },
  });
  // Swap the new directory in: the old one is renamed away first, then removed.
  const dist = path.dirname(CLI_BUNDLE);
  const old = `${dist}.old.${process.pid}`;
  await rename(dist, old).catch(() => undefined);
  await rename(tmp, dist);
  await rm(old, { recursive: true, force: true });
  await chmod(CLI_BUNDLE, 0o755);
  return CLI_BUNDLE;
}

const isEntryPoint = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntryPoint) {
  const started = performance.now();
  buildCli({ force: process.argv.includes("--force") })
    .then((file) =>
      console.log(`cli: ${path.relative(REPO_ROOT, file)} (${Math.round(performance.now() - started)} ms)`),
    )
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    });
}
