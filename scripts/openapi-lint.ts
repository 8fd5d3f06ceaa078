/**
 * Lints the OpenAPI document the Worker serves at /openapi.json with `redocly lint` (rules in
 * redocly.yaml at the repository root). Part of `npm run lint`.
 *
 *   tsx scripts/openapi-lint.ts
 *
 * The document only exists at run time (generated from the routes' zod schemas), so it is built the
 * way GET /openapi.json builds it: `openApiDocument(createApp(), PUBLIC_URL)`, in this process, in about
 * a second. When the app's module graph imports what Node cannot load (`cloudflare:*` modules, the
 * dashboard's text modules), the Worker is started in workerd instead (bench/support/worker.ts, a
 * few seconds) and the document fetched from it. The server URL is wrangler.toml's PUBLIC_URL, as in `wrangler dev`.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const REDOCLY = path.join(ROOT, "node_modules", "@redocly", "cli", "bin", "cli.js");

/** The app factory and the document builder, typed here so tsconfig.node.json need not compile worker/. */
interface AppModule {
  createApp(): unknown;
}
interface OpenApiModule {
  openApiDocument(app: unknown, serverUrl: string): unknown;
}

async function publicUrl(): Promise<string> {
  const toml = await readFile(path.join(ROOT, "wrangler.toml"), "utf8");
  const match = /^PUBLIC_URL\s*=\s*"([^"]+)"/m.exec(toml);
  if (!match?.[1]) throw new Error("wrangler.toml has no PUBLIC_URL in [vars]");
  return match[1];
}

/** Built in this process; undefined when the app cannot be loaded outside workerd. */
async function documentInProcess(serverUrl: string): Promise<unknown> {
  // Specifiers in variables: tsc must not type-check worker/ against Node's types (see AppModule).
  const appModule = "../worker/app";
  const openApiModule = "../worker/routes/docs/openapi";
  try {
    const { createApp } = (await import(appModule)) as AppModule;
    const { openApiDocument } = (await import(openApiModule)) as OpenApiModule;
    return openApiDocument(createApp(), serverUrl);
  } catch (err) {
    // workerd-only imports: `cloudflare:*` modules, and the dashboard's stylesheets and browser files,
    // which wrangler bundles as text (wrangler.toml `[[rules]]`) and Node refuses before running any
    const code = (err as { code?: string }).code;
    if (code === "ERR_UNSUPPORTED_ESM_URL_SCHEME" || code === "ERR_UNKNOWN_FILE_EXTENSION") return undefined;
    throw err;
  }
}

async function documentFromWorkerd(): Promise<unknown> {
  const { startLocalWorker } = await import("../bench/support/worker");
  const worker = await startLocalWorker();
  try {
    const res = await fetch(`${worker.url}/openapi.json`);
    if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
    return await res.json();
  } finally {
    await worker.stop();
  }
}

async function main(): Promise<number> {
  let doc = await documentInProcess(await publicUrl());
  if (doc === undefined) {
    console.error("openapi-lint: the app imports cloudflare:* modules; starting the Worker in workerd");
    doc = await documentFromWorkerd();
  }
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-openapi-"));
  try {
    await writeFile(path.join(dir, "openapi.json"), JSON.stringify(doc, null, 2));
    // Run beside the file so that problems are reported as openapi.json:line:column.
    const lint = spawnSync(
      process.execPath,
      [REDOCLY, "lint", "openapi.json", "--config", path.join(ROOT, "redocly.yaml")],
      { cwd: dir, stdio: "inherit" },
    );
    if (lint.error) throw lint.error;
    return lint.status ?? 1;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
