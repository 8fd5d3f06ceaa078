import type { PresetSlug } from "../../shared/catalog";
import type { FixAction } from "../../shared/protocol/health";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME, LABEL_PORT, podNames } from "../docker/naming";
import { PYTHON3, SH } from "../docker/pod-bin";
import { containerIp, inspectContainer } from "../docker/resources";
import { waitForPort } from "../docker/wait-port";
import { AgentError } from "../errors";
import { reloadApp } from "../inside/reload";
import { restartAppService } from "../inside/runtime";
import type { Logger } from "../logger";
import { gatherHealthFacts, NODE_OTHER_ENTRIES, PORT_FORWARD_WORKER } from "./facts";
import { portAnswers, serviceOf } from "./monitor";

/**
 * The one-click fixes of a diagnosis, applied to a running pod as pod_user. Each looks again at
 * what it needs instead of trusting the stored diagnosis (the user may have changed things since):
 * - install_dependencies: the reload (npm install / pip install -r, then the app restarts);
 * - add_start_script: `"start": "node <entry>"` into package.json (package.json `main` when that
 *   file exists, else the first of NODE_OTHER_ENTRIES), atomically, then the app service restarts;
 * - forward_port: the worker PORT_FORWARD_WORKER, a small asyncio forwarder (python3 is in every
 *   image) from the preset's port on the pod's own address to the port the app listens on, started
 *   by `pod-reload`. It binds the pod's address, not 0.0.0.0, so it also fronts an app that
 *   listens on 127.0.0.1 only.
 * Nothing left to fix is `conflict`. Afterwards the fix waits (bounded) for the port to answer.
 */

export type FixOutcome =
  | { ok: true; action: FixAction; detail: string }
  | { ok: false; depsOutput: string; exitCode: number | null };

const ANSWER_TIMEOUT_MS = 20_000;

// $@ = the entry candidates. Keeps the file's key order and its indentation.
const ADD_START = `import json, os, re, sys
def out(s):
    print(s)
    sys.exit(0)
def safe(p):
    return bool(re.fullmatch(r"[A-Za-z0-9_./@+-]+", p)) and not p.startswith("/") and ".." not in p.split("/")
try:
    text = open("package.json", encoding="utf-8").read()
except FileNotFoundError:
    out("fail there is no package.json")
try:
    pkg = json.loads(text)
except ValueError:
    out("fail package.json is not valid JSON")
if not isinstance(pkg, dict):
    out("fail package.json is not an object")
scripts = pkg.get("scripts")
if scripts is None:
    scripts = {}
if not isinstance(scripts, dict):
    out("fail the scripts of package.json are not an object")
if isinstance(scripts.get("start"), str) and scripts["start"].strip():
    out("fail package.json already has a start script")
main = pkg.get("main")
entry = main if isinstance(main, str) and safe(main) and os.path.isfile(main) else None
entry = entry or next((c for c in sys.argv[1:] if os.path.isfile(c)), None)
if not entry:
    out("fail no entry file found")
scripts["start"] = "node " + entry
pkg["scripts"] = scripts
m = re.search(r"\\n([ \\t]+)\\S", text)
indent = m.group(1) if m else "  "
tmp = "package.json.podhost-tmp"
with open(tmp, "w", encoding="utf-8") as f:
    f.write(json.dumps(pkg, indent=indent, ensure_ascii=False) + "\\n")
os.chmod(tmp, os.stat("package.json").st_mode & 0o777)
os.replace(tmp, "package.json")
out("ok " + entry)
`;

// The forwarder; no single quote in it, so it sits in single quotes in the worker file. It listens
// only while the target accepts connections: a dead app then looks dead to the health check (not
// like a port that accepts and hangs up), and an app that moves to PORT itself can take the port.
const FORWARDER = `import asyncio, socket, sys
LISTEN, TARGET = int(sys.argv[1]), int(sys.argv[2])
async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        pass
async def handle(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection("localhost", TARGET)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    for w in (writer, up_writer):
        w.close()
async def target_up():
    try:
        _, w = await asyncio.wait_for(asyncio.open_connection("localhost", TARGET), 2)
        w.close()
        return True
    except (OSError, asyncio.TimeoutError):
        return False
async def main():
    own = [a for a in socket.gethostbyname_ex(socket.gethostname())[2] if not a.startswith("127.")]
    server = None
    while True:
        up = await target_up()
        if up and server is None:
            try:
                server = await asyncio.start_server(handle, own or ["0.0.0.0"], LISTEN)
                print("forwarding", ",".join(own), LISTEN, "->", TARGET, flush=True)
            except OSError as e:
                print("cannot listen on", LISTEN, e, flush=True)
        elif not up and server is not None:
            server.close()
            server = None
            print("paused: nothing listens on", TARGET, flush=True)
        await asyncio.sleep(2)
asyncio.run(main())`;

const workerFile = (listen: number, target: number) =>
  `# Written by podhost's health fix: web traffic arrives on port ${listen}, the app listens on ${target}.
# Delete this file and run pod-reload once the app listens on $PORT (${listen}) on 0.0.0.0.
exec /usr/bin/python3 -c '${FORWARDER}' ${listen} ${target}
`;

// stdin → ~/.pod/workers/<name>, atomically, then runit picks it up (a changed one restarts).
const WRITE_WORKER = `set -eu
d=${HOME}/.pod/workers
mkdir -p "$d"
t=$(mktemp ${HOME}/.pod/.port-forward.XXXXXX)
trap 'rm -f "$t"' EXIT
cat >"$t"
mv -f "$t" "$d/${PORT_FORWARD_WORKER}"
trap - EXIT
/opt/podhost/bin/pod-reload`;

export async function applyFix(
  docker: DockerClient,
  prefix: string,
  pod: string,
  preset: PresetSlug,
  action: FixAction,
  log: Logger,
): Promise<FixOutcome> {
  const names = podNames(prefix, pod);
  const info = await inspectContainer(docker, names.container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  if (!info.State.Running) throw new AgentError("bad_request", "pod is not running; start it first");
  const ip = containerIp(info, names.network);
  const port = Number(info.Config.Labels?.[LABEL_PORT]);

  const answers = async (what: string) => {
    if (!ip || !port) return what;
    const ok = await waitForPort(ip, port, ANSWER_TIMEOUT_MS);
    return `${what}; ${ok ? `the app answers on port ${port}` : `nothing answers on port ${port} yet (see ~/logs/app.log)`}`;
  };

  switch (action) {
    case "install_dependencies": {
      const r = await reloadApp(docker, prefix, pod, preset, log);
      if (!r.ok) return r;
      if (!r.depsInstalled)
        throw new AgentError("conflict", "no package.json or requirements.txt to install from");
      return {
        ok: true,
        action,
        detail: await answers(`dependencies installed with ${r.depsInstalled}, app restarted`),
      };
    }
    case "add_start_script": {
      if (preset !== "nodejs") throw new AgentError("bad_request", "a start script is a Node.js fix");
      const r = await execInContainer(
        docker,
        names.container,
        [PYTHON3, "-I", "-c", ADD_START, ...NODE_OTHER_ENTRIES],
        {
          workingDir: `${HOME}/app`,
          signal: AbortSignal.timeout(15_000),
        },
      );
      const line = r.stdout.trim().split("\n").pop() ?? "";
      if (r.exitCode !== 0 || !line.startsWith("ok ")) {
        if (line.startsWith("fail ")) throw new AgentError("conflict", line.slice(5));
        throw new AgentError("internal", `editing package.json failed: ${r.stderr.trim().slice(0, 300)}`);
      }
      await restartAppService(docker, prefix, pod, log);
      return {
        ok: true,
        action,
        detail: await answers(`added "start": "node ${line.slice(3)}" to package.json`),
      };
    }
    case "forward_port": {
      if (!port) throw new AgentError("internal", `pod ${pod} has no port label`);
      if (ip && (await portAnswers(ip, port)))
        throw new AgentError("conflict", `the app already answers on port ${port}`);
      const facts = await gatherHealthFacts(docker, names.container, serviceOf({ preset }));
      const mine = facts.ownershipKnown ? facts.listeners.filter((l) => l.byService) : facts.listeners;
      const target =
        mine.find((l) => l.port === port && l.loopback)?.port ?? mine.find((l) => l.port !== port)?.port;
      if (!target) throw new AgentError("conflict", "the app listens on no port to forward to");
      const r = await execInContainer(docker, names.container, [SH, "-c", WRITE_WORKER], {
        workingDir: HOME,
        stdin: workerFile(port, target),
        signal: AbortSignal.timeout(20_000),
      });
      if (r.exitCode !== 0) {
        throw new AgentError(
          "internal",
          `installing the port forwarder failed: ${r.stderr.trim().slice(0, 300)}`,
        );
      }
      return {
        ok: true,
        action,
        detail: await answers(`port ${port} forwarded to ${target} (worker ${PORT_FORWARD_WORKER})`),
      };
    }
  }
}
