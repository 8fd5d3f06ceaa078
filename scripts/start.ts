/**
 * `npm start`: the whole service on this machine.
 *   1. the Worker's and the ingress's ports are free (or it says who holds them, and exits)
 *   2. host prerequisites (scripts/host/prepare.sh --no-browser): Docker engine, the pods' egress
 *      rules, nginx and host tools, the pods' disk, the pod images and the database service images
 *   3. D1 migrations applied to the local database (.wrangler/state)
 *   4. this machine registered as host "local" (a fresh agent token each start)
 *   5. the Worker on wrangler dev (http://localhost:8787), then the agent connected to it
 * Ctrl-C stops everything it started (pods keep running in Docker). When the Worker or the agent
 * exits on its own, the other is stopped too and `npm start` exits non-zero with the reason.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AGENT_ENV, agentCommand, buildAgent } from "./build-agent";
import { d1Migrate } from "./lib/d1";
import { registerHost } from "./lib/hosts";
import {
  type GroupChild,
  killGroupsNow,
  portFree,
  portHolder,
  spawnGroup,
  stopGroups,
} from "./lib/process-group";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const API_PORT = Number(process.env.PORT ?? 8787);
const API_URL = `http://127.0.0.1:${API_PORT}`;
const INGRESS = process.env.PODHOST_INGRESS_LISTEN ?? "127.0.0.1:8080";
const STATE_DIR = path.join(ROOT, ".podhost", "agent");

const INGRESS_HOST = INGRESS.slice(0, INGRESS.lastIndexOf(":")) || "0.0.0.0";
const INGRESS_PORT = Number(INGRESS.slice(INGRESS.lastIndexOf(":") + 1));
/** the agent's own nginx master (agent/ingress/nginx.ts): its pid file and config under the state dir */
const NGINX_DIR = path.join(STATE_DIR, "nginx");

const step = (msg: string) => console.log(`\x1b[1m▸ ${msg}\x1b[0m`);
const fail = (msg: string): never => {
  console.error(`\x1b[31mnpm start: ${msg}\x1b[0m`);
  process.exit(1);
};

/** The pid of the ingress nginx a previous start left running, if it is ours (the agent reuses it). */
function ourIngressPid(): number | null {
  const pid = Number(readFileIfAny(path.join(NGINX_DIR, "nginx.pid")).trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const cmdline = readFileIfAny(`/proc/${pid}/cmdline`);
  return cmdline.startsWith("nginx: master") && cmdline.includes(path.join(NGINX_DIR, "nginx.conf"))
    ? pid
    : null;
}

function readFileIfAny(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Fails now, naming the holder, instead of minutes later when the Worker or the ingress cannot listen. */
async function checkPort(what: string, host: string, port: number, hint: string) {
  if (await portFree(host, port)) return;
  const holder = portHolder(port);
  fail(
    `port ${port} (${what}) is taken${holder ? ` by ${holder}` : ""}. Is another \`npm start\` running? ` +
      `Stop that process, or ${hint}.`,
  );
}

function runScript(script: string, args: string[] = []) {
  const result = spawnSync("bash", [path.join(ROOT, script), ...args], { stdio: "inherit", cwd: ROOT });
  if (result.status !== 0) fail(`${script} failed (exit ${result.status})`);
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

await checkPort("the API", "127.0.0.1", API_PORT, "start on another port with PORT=8788 npm start");
// An ingress of ours still running (the start before was killed) is reused by the agent.
if (!ourIngressPid()) {
  await checkPort(
    "the pods' ingress",
    INGRESS_HOST,
    INGRESS_PORT,
    "set PODHOST_INGRESS_LISTEN=127.0.0.1:8081",
  );
}

step("Host prerequisites: Docker engine, egress rules, nginx, the pods' disk, pod and service images");
runScript("scripts/host/prepare.sh", ["--no-browser"]);

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
    // the edge router (docs/edge.md) reaches this host's ingress here
    ingressOrigin: `http://${INGRESS_HOST === "0.0.0.0" ? "127.0.0.1" : INGRESS_HOST}:${INGRESS_PORT}`,
  },
  { rotate: true },
);

const children: GroupChild[] = [];
let stopping = false;
/** Stops every process group it started and the agent's ingress, then exits with `code`. */
async function stopAll(code: number, reason?: string) {
  if (stopping) return;
  stopping = true;
  if (reason) console.error(`\x1b[31mnpm start: ${reason}; stopping the rest.\x1b[0m`);
  await stopGroups(children);
  // The agent's nginx runs detached (it outlives an agent restart in production); here it is ours.
  const nginx = ourIngressPid();
  if (nginx) process.kill(nginx, "SIGQUIT");
  process.exit(code);
}
process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));
process.on("SIGHUP", () => void stopAll(0));
// The last word whatever happens (an exception in this script included): no orphan keeps a port.
process.on("exit", () => killGroupsNow(children));
/** A child that exits while the others run ends the whole start, non-zero, with its reason. */
function supervise(group: GroupChild) {
  children.push(group);
  void group.exited.then((reason) => stopAll(1, reason));
}

/**
 * Secrets at rest (worker/lib/secret-box.ts): git tokens under GIT_TOKEN_KEY, database service
 * passwords under SERVICE_PASSWORD_KEY, invitation tokens under INVITATION_TOKEN_KEY. Each is made
 * once for this machine and kept in .dev.vars (git-ignored), so what one start stored still opens on
 * the next.
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
ensureSecretKey("INVITATION_TOKEN_KEY");

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
  // alert webhooks may reach a receiver on this machine (docs/alerts.md)
  "ALLOW_ALERT_LOOPBACK:true",
  // the dashboard's links to pods: locally they answer through the edge, on the Worker's port
  `POD_PUBLIC_PORT:${API_PORT}`,
];
supervise(
  spawnGroup("the Worker (wrangler dev)", path.join(ROOT, "node_modules", ".bin", "wrangler"), workerArgs, {
    cwd: ROOT,
    // no terminal input: the children lead sessions of their own (wrangler's hotkeys would read it)
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  }),
);
await waitForHealth(API_URL, 60_000).catch((error: Error) => stopAll(1, error.message));

step(`Starting the agent (its ingress on ${INGRESS}, which answers only the edge)`);
mkdirSync(STATE_DIR, { recursive: true });
// The agent runs compiled (dist/agent/main.js), as in production; rebuilt here when its sources changed.
await buildAgent();
const [node, agentArgs] = agentCommand();
const agentEnv = {
  ...process.env,
  ...AGENT_ENV,
  PODHOST_API_URL: API_URL,
  PODHOST_AGENT_TOKEN: host.token,
  PODHOST_STATE_DIR: STATE_DIR,
  PODHOST_INGRESS_LISTEN: INGRESS,
  // the Worker's ALLOW_HTTP_GIT_LOOPBACK on the host's side: a repository served over plain http
  // from this machine may be fetched (every other inward address stays refused, docs/git.md)
  PODHOST_ALLOW_HTTP_GIT_LOOPBACK: "true",
};
supervise(
  spawnGroup("the agent", node, agentArgs, {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    env: agentEnv,
  }),
);

await waitForPlaceable(API_URL, host.token);

console.log(`
Ready. Open the dashboard: http://localhost:${API_PORT}/app
The API is at http://localhost:${API_PORT} (reference: http://localhost:${API_PORT}/docs).
Pods answer through the edge at http://<name>.pods.localhost:${API_PORT} — see README "Your first pod".
`);
