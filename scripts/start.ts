/**
 * `npm start`: the whole service on this machine.
 *   1. host prerequisites: Docker engine (installed and started if missing), nginx, pod images
 *   2. D1 migrations applied to the local database (.wrangler/state)
 *   3. this machine registered as host "local" (a fresh agent token each start)
 *   4. the Worker on wrangler dev (http://localhost:8787), then the agent connected to it
 * Ctrl-C stops everything.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AGENT_ENV, agentCommand, buildAgent } from "./build-agent";
import { d1Migrate } from "./lib/d1";
import { registerHost } from "./lib/hosts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const API_PORT = Number(process.env.PORT ?? 8787);
const API_URL = `http://127.0.0.1:${API_PORT}`;
const INGRESS = process.env.PODHOST_INGRESS_LISTEN ?? "127.0.0.1:8080";
const STATE_DIR = path.join(ROOT, ".podhost", "agent");

const step = (msg: string) => console.log(`\x1b[1m▸ ${msg}\x1b[0m`);

function runScript(script: string) {
  const result = spawnSync("bash", [path.join(ROOT, script)], { stdio: "inherit", cwd: ROOT });
  if (result.status !== 0) {
    console.error(`${script} failed (exit ${result.status})`);
    process.exit(1);
  }
}

async function waitForHealth(url: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the Worker did not answer on ${url} within ${timeoutMs / 1000} s`);
}

/**
 * "Ready" means a pod can be created now: the agent has connected and its host takes pods (its
 * ingress is up). Until then the host's reason is shown, e.g. another server holding the port.
 */
async function waitForPlaceable(url: string, token: string) {
  let lastReason = "";
  for (;;) {
    let reason = "the agent has not connected yet";
    try {
      const res = await fetch(`${url}/agent/ping`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { placeable?: boolean; reason?: string; error?: string };
      if (res.ok && body.placeable) return;
      reason = body.reason ?? body.error ?? reason;
    } catch {
      // the Worker is restarting
    }
    if (reason !== lastReason) console.log(`  waiting for the host: ${reason}`);
    lastReason = reason;
    await new Promise((r) => setTimeout(r, 500));
  }
}

step("Host prerequisites: Docker engine, nginx, pod images");
runScript("scripts/host/ensure-docker.sh");
runScript("scripts/host/ensure-nginx.sh");
runScript("scripts/host/build-images.sh");

step("Applying D1 migrations to the local database");
await d1Migrate();

step("Registering this machine as host 'local'");
const host = await registerHost(
  {
    name: "local",
    region: "eu-central",
    sshHost: "localhost",
    sshPortMin: 2200,
    sshPortMax: 2299,
    // Development capacity: generous, overcommitted on purpose.
    cpu: 64,
    memoryMb: 131072,
    diskGb: 1000,
  },
  { rotate: true },
);

const children: ChildProcess[] = [];
let stopping = false;
const stopAll = (code: number) => {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill("SIGTERM");
  setTimeout(() => process.exit(code), 3_000).unref();
};
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));

/**
 * Secrets at rest (worker/lib/secret-box.ts): git tokens under GIT_TOKEN_KEY, database service
 * passwords under SERVICE_PASSWORD_KEY. Each is made once for this machine and kept in .dev.vars
 * (git-ignored), so what one start stored still opens on the next.
 */
function ensureSecretKey(name: string) {
  const file = path.join(ROOT, ".dev.vars");
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (new RegExp(`^${name}\\s*=`, "m").test(text)) return;
  const line = `${name}="${randomBytes(32).toString("base64")}"\n`;
  appendFileSync(file, text && !text.endsWith("\n") ? `\n${line}` : line);
}
ensureSecretKey("GIT_TOKEN_KEY");
ensureSecretKey("SERVICE_PASSWORD_KEY");

step(`Starting the Worker on ${API_URL}`);
// Locally, a repository may be served over plain http from this machine (a test git server).
const workerArgs = [
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  String(API_PORT),
  "--var",
  "ALLOW_HTTP_GIT_LOOPBACK:true",
  "ALLOW_IMPORT_LOOPBACK:true",
];
const worker = spawn("npx", ["wrangler", ...workerArgs], {
  cwd: ROOT,
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
});
children.push(worker);
worker.on("exit", (code) => stopAll(code ?? 1));
await waitForHealth(API_URL, 60_000);

step(`Starting the agent (ingress on http://<pod>.pods.localhost:${INGRESS.split(":").pop()})`);
mkdirSync(STATE_DIR, { recursive: true });
// The agent runs compiled (dist/agent/main.js), as in production; rebuilt here when its sources changed.
await buildAgent();
const [node, agentArgs] = agentCommand();
const agent = spawn(node, agentArgs, {
  cwd: ROOT,
  stdio: "inherit",
  env: {
    ...process.env,
    ...AGENT_ENV,
    PODHOST_API_URL: API_URL,
    PODHOST_AGENT_TOKEN: host.token,
    PODHOST_STATE_DIR: STATE_DIR,
    PODHOST_INGRESS_LISTEN: INGRESS,
  },
});
children.push(agent);
agent.on("exit", (code) => stopAll(code ?? 1));

await waitForPlaceable(API_URL, host.token);

console.log(`
Ready. The API is at http://localhost:${API_PORT} (reference: http://localhost:${API_PORT}/docs).
Pods answer at http://<name>.pods.localhost:${INGRESS.split(":").pop()} — see README "Your first pod".
`);
