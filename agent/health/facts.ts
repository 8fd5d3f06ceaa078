import { randomBytes } from "node:crypto";
import { START_FILES } from "../../shared/start-files";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME } from "../docker/naming";
import { SH } from "../docker/pod-bin";

/**
 * What the health classifier looks at, gathered by ONE fixed script run as pod_user in the running
 * pod (a few reads of /proc and the home, no installs, no network): the service's runit status,
 * the processes and which sockets they hold, the listening TCP sockets, the cgroup's OOM-kill
 * count, which start files exist, package.json / requirements.txt, and the tail of the service's
 * log. Sections are delimited by a random marker per run, so file contents cannot forge one.
 */

/** where an app's entry often is when it is none of the defaults; the start-script fix uses them */
export const NODE_OTHER_ENTRIES = [
  "src/server.js",
  "src/index.js",
  "src/app.js",
  "src/main.js",
  "dist/server.js",
  "dist/index.js",
  "dist/main.js",
  "build/server.js",
  "build/index.js",
  "server.mjs",
  "index.mjs",
  "app.mjs",
  "main.mjs",
  "server.cjs",
  "index.cjs",
  "app.cjs",
];
/** the forwarder the port fix installs (agent/health/fix.ts) */
export const PORT_FORWARD_WORKER = "podhost-port-forward";

const CANDIDATES = [
  "package.json",
  "requirements.txt",
  "node_modules",
  ".venv",
  ...START_FILES.nodejs,
  ...START_FILES.python,
  ...NODE_OTHER_ENTRIES,
];

const LOG_TAIL_BYTES = 16 * 1024;

// $1 marker, $2 service, $3 log file name. `find -lname` lists every process's sockets in one
// process (no fork per fd); /proc/net/tcp{,6} is the pod's own network namespace.
const SCRIPT = `M=$1; S=$2; L=$3; H=${HOME}
sec() { printf '\\n%s %s\\n' "$M" "$1"; }
sec sv; timeout 5 sv status "$S" 2>&1 | head -c 300
sec ps; ps -e -o pid=,ppid= 2>/dev/null
sec sockets; find /proc/[0-9]*/fd -lname 'socket:*' -printf '%h %l\\n' 2>/dev/null
sec tcp; grep -h ' 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null
sec oom; cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null | grep '^oom_kill '
sec files; cd "$H/app" 2>/dev/null && for f in ${CANDIDATES.join(" ")}; do [ -e "$f" ] && echo "$f"; done
[ -s "$H/.pod/start" ] && echo ".pod/start"
[ -e "$H/.pod/workers/${PORT_FORWARD_WORKER}" ] && echo ".pod/workers/${PORT_FORWARD_WORKER}"
sec main; [ -f package.json ] && python3 -I -c 'import json,os
m=json.load(open("package.json")).get("main")
print(m if isinstance(m,str) and os.path.isfile(m) else "")' 2>/dev/null
sec pkg; head -c 65536 package.json 2>/dev/null
sec req; head -c 16384 requirements.txt 2>/dev/null
sec log; tail -c ${LOG_TAIL_BYTES} "$H/logs/$L" 2>/dev/null
exit 0`;

export interface ServiceStatus {
  state: "run" | "down" | "finish" | "unknown";
  pid: number | null;
  /** seconds in the current state */
  seconds: number | null;
}

export interface Listener {
  port: number;
  /** bound to 127.0.0.1 / ::1 only: unreachable from the ingress */
  loopback: boolean;
  /** held by the service's process or one of its descendants */
  byService: boolean;
}

export interface HealthFacts {
  service: "app" | "web";
  status: ServiceStatus;
  listeners: Listener[];
  /** whether socket ownership could be worked out (else byService is false everywhere) */
  ownershipKnown: boolean;
  oomKills: number;
  files: Set<string>;
  /** package.json's `main` when that file exists */
  mainEntry: string | null;
  packageJson: PackageJson | null | "invalid";
  requirements: string | null;
  logLines: string[];
}

export interface PackageJson {
  scripts?: Record<string, unknown>;
  main?: unknown;
  dependencies?: Record<string, unknown>;
  devDependencies?: Record<string, unknown>;
  optionalDependencies?: Record<string, unknown>;
  peerDependencies?: Record<string, unknown>;
}

export async function gatherHealthFacts(
  docker: DockerClient,
  container: string,
  service: "app" | "web",
): Promise<HealthFacts> {
  const marker = `@@${randomBytes(12).toString("hex")}`;
  const log = service === "app" ? "app.log" : "error.log";
  const r = await execInContainer(docker, container, [SH, "-c", SCRIPT, "sh", marker, service, log], {
    workingDir: HOME,
    maxOutputBytes: 512 * 1024,
    signal: AbortSignal.timeout(20_000),
  });
  return parseFacts(r.stdout, marker, service);
}

function sections(out: string, marker: string): Map<string, string> {
  const map = new Map<string, string>();
  const parts = out.split(`\n${marker} `);
  for (const part of parts.slice(1)) {
    const nl = part.indexOf("\n");
    const name = nl < 0 ? part : part.slice(0, nl);
    map.set(name.trim(), nl < 0 ? "" : part.slice(nl + 1));
  }
  return map;
}

/** `run: app: (pid 31) 12s`, `down: app: 3s, normally up`, `finish: app: (pid 9) 0s` */
export function parseSvStatus(text: string): ServiceStatus {
  const m = /^(run|down|finish): [^:]+: (?:\(pid (\d+)\) )?(\d+)s/.exec(text.trim());
  if (!m) return { state: "unknown", pid: null, seconds: null };
  return {
    state: m[1] as ServiceStatus["state"],
    pid: m[2] ? Number(m[2]) : null,
    seconds: Number(m[3]),
  };
}

/** The kernel's hex address of a LISTEN line: is it loopback only? */
function isLoopback(hexAddress: string): boolean {
  if (hexAddress.length === 8) return hexAddress.endsWith("7F"); // 127.x.x.x, little-endian
  const v6 = hexAddress.toUpperCase();
  return v6 === "00000000000000000000000001000000" || /^0000000000000000FFFF0000[0-9A-F]{6}7F$/.test(v6);
}

export function parseFacts(out: string, marker: string, service: "app" | "web"): HealthFacts {
  const s = sections(out, marker);
  const status = parseSvStatus(s.get("sv") ?? "");

  // The service's process tree: its pid and every descendant.
  const children = new Map<number, number[]>();
  for (const line of (s.get("ps") ?? "").split("\n")) {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number);
    if (!pid || ppid === undefined || Number.isNaN(ppid)) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const tree = new Set<number>();
  const stack = status.pid ? [status.pid] : [];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (tree.has(pid)) continue;
    tree.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  const serviceInodes = new Set<string>();
  for (const line of (s.get("sockets") ?? "").split("\n")) {
    const m = /^\/proc\/(\d+)\/fd socket:\[(\d+)\]$/.exec(line.trim());
    if (m?.[1] && m[2] && tree.has(Number(m[1]))) serviceInodes.add(m[2]);
  }

  const byPort = new Map<number, Listener>();
  for (const line of (s.get("tcp") ?? "").split("\n")) {
    const cols = line.trim().split(/\s+/);
    const [addr, portHex] = (cols[1] ?? "").split(":");
    if (cols[3] !== "0A" || !addr || !portHex) continue;
    const port = Number.parseInt(portHex, 16);
    const listener = byPort.get(port) ?? { port, loopback: true, byService: false };
    listener.loopback &&= isLoopback(addr);
    listener.byService ||= serviceInodes.has(cols[9] ?? "");
    byPort.set(port, listener);
  }

  const oom = /^oom_kill (\d+)/m.exec(s.get("oom") ?? "");
  const files = new Set(
    (s.get("files") ?? "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean),
  );
  let packageJson: HealthFacts["packageJson"] = null;
  if (files.has("package.json")) {
    try {
      const parsed: unknown = JSON.parse(s.get("pkg") ?? "");
      packageJson = parsed && typeof parsed === "object" ? (parsed as PackageJson) : "invalid";
    } catch {
      packageJson = "invalid";
    }
  }
  const main = (s.get("main") ?? "").trim();
  return {
    service,
    status,
    listeners: [...byPort.values()].sort((a, b) => a.port - b.port),
    ownershipKnown: serviceInodes.size > 0,
    oomKills: oom?.[1] ? Number(oom[1]) : 0,
    files,
    mainEntry: main && safeRelativePath(main) ? main : null,
    packageJson,
    requirements: files.has("requirements.txt") ? (s.get("req") ?? "") : null,
    logLines: (s.get("log") ?? "").split("\n").filter((l) => l.length > 0),
  };
}

/** A path inside ~/app that can go into a start script as one word. */
export const safeRelativePath = (p: string) =>
  /^[A-Za-z0-9_./@+-]+$/.test(p) && !p.startsWith("/") && !p.split("/").includes("..");
