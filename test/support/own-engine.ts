import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, statfs, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Addresses of this engine's networks: apart from the machine's engine (its pools are 172.17.0.0/16
 * and 10.201.0.0/16, /etc/docker/daemon.json), which does not know of these and would hand out the
 * same subnets.
 */
const ADDRESS_POOL = { base: "10.214.0.0/16", size: 26 };

/**
 * The engine's default bridge, made by the test: an engine started without one (`--bridge=none`)
 * deletes the host's `docker0` as it starts, the machine's engine's default bridge (found here: its
 * containers on it then failed to start until `docker0` was made again). With `--bridge=<ours>` the
 * engine uses this one and leaves `docker0` alone. Its subnet is outside the pool above, its name
 * outside the pod bridges' pattern (`phb…`).
 */
const DEFAULT_BRIDGE = { name: "podhost-eng0", address: "10.215.0.1/24", subnet: "10.215.0.0/24" };

/**
 * A Docker engine of a test's own, beside the machine's (which every other test shares and which is
 * never touched): its data root on a small loop-mounted ext4 the test makes, so the test can fill
 * the engine's disk; its own socket, exec root (runc's state, its own containerd under it) and pid
 * file. Its default bridge is one the test makes (`DEFAULT_BRIDGE`) and it makes no iptables rules
 * (`--iptables=false --ip6tables=false`): the host's pod egress rules match pod bridges by name
 * (`phb…`, which the agent names its networks' bridges), whichever engine made them, and the host
 * reaches a container's
 * address on its network's bridge without the engine's NAT. Its pods have no way out to the
 * internet (no masquerade): enough for a pod that serves.
 */
export interface OwnEngine {
  /** the engine's unix socket (the agent's PODHOST_DOCKER_SOCKET) */
  socket: string;
  /** runc's state root of its containers (the agent's PODHOST_RUNC_ROOT) */
  runcRoot: string;
  /** the engine's data root, the mount point of its file system */
  dataRoot: string;
  /** `docker -H <socket> …`, its stdout */
  docker(args: string[]): Promise<string>;
  /** copy images of the machine's engine into this one */
  load(images: string[]): Promise<void>;
  /** fill the data root's file system to its last byte; its bytes left (0) */
  fill(): Promise<number>;
  /** remove what `fill` wrote; its bytes left */
  free(): Promise<number>;
  /** the end of the engine's log, for a failure */
  logTail(): Promise<string>;
  /** remove everything: its containers, networks (and their bridges), the engine, its mounts, files */
  stop(): Promise<void>;
}

export async function startOwnEngine(sizeMb: number): Promise<OwnEngine> {
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-engine-"));
  const dataRoot = path.join(dir, "root");
  const execRoot = path.join(dir, "exec");
  const socket = path.join(dir, "docker.sock");
  const logFile = path.join(dir, "dockerd.log");
  const fillers = [path.join(dataRoot, "filler"), path.join(dataRoot, "filler-rest")];
  let child: ChildProcess | undefined;
  const bridges = new Set<string>();
  let ownBridge = false;

  const docker = async (args: string[]) =>
    (await run("docker", ["-H", `unix://${socket}`, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout;
  const bytesLeft = async () => {
    const s = await statfs(dataRoot);
    return s.bavail * s.bsize;
  };

  const stop = async () => {
    if (child && child.exitCode === null) {
      // every container and network the test left: a pod's home stays mounted while its container
      // is there, and a network's bridge outlives the engine
      const containers = (await docker(["ps", "-aq"]).catch(() => "")).split("\n").filter(Boolean);
      if (containers.length) await docker(["rm", "-f", "-v", ...containers]).catch(() => undefined);
      const networks = (
        await docker(["network", "ls", "-q", "--no-trunc", "--filter", "type=custom"]).catch(() => "")
      )
        .split("\n")
        .filter(Boolean);
      for (const id of networks) {
        const named = await docker([
          "network",
          "inspect",
          "--format",
          '{{index .Options "com.docker.network.bridge.name"}}',
          id,
        ]).catch(() => "");
        bridges.add(named.trim() || `br-${id.slice(0, 12)}`);
        await docker(["network", "rm", id]).catch(() => undefined);
      }
      const exited = new Promise<void>((resolve) => child?.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const inTime = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000)),
      ]);
      if (!inTime) {
        child.kill("SIGKILL");
        await exited;
      }
    }
    // its containerd, should the engine have died without stopping it
    const containerdPid = Number(
      await readFile(path.join(execRoot, "containerd", "containerd.pid"), "utf8").catch(() => ""),
    );
    if (containerdPid > 0) {
      try {
        process.kill(containerdPid, "SIGKILL");
      } catch {
        // gone with the engine
      }
    }
    for (const bridge of [...bridges, ...(ownBridge ? [DEFAULT_BRIDGE.name] : [])])
      await run("ip", ["link", "delete", bridge]).catch(() => undefined);
    // whatever is still mounted under the test's directory (network namespaces, layers), deepest first
    const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
    const under = mountinfo
      .split("\n")
      .map((l) => l.split(" ")[4] ?? "")
      .filter((m) => m.startsWith(`${dir}/`))
      .sort((a, b) => b.length - a.length);
    for (const m of under)
      await run("umount", [m]).catch(() => run("umount", ["-l", m]).catch(() => undefined));
    await rm(dir, { recursive: true, force: true });
  };

  try {
    // routes into the pool are another engine's networks (one of a run killed outright): the same
    // subnets again would send the host's packets to either
    for (const range of [ADDRESS_POOL.base, DEFAULT_BRIDGE.subnet]) {
      const taken = (await run("ip", ["-4", "route", "show", "root", range])).stdout.trim();
      if (taken) throw new Error(`${range} is routed already (remove what holds it):\n${taken}`);
    }
    const docker0 = await docker0Index();
    await run("ip", ["link", "add", DEFAULT_BRIDGE.name, "type", "bridge"]);
    ownBridge = true;
    await run("ip", ["addr", "add", DEFAULT_BRIDGE.address, "dev", DEFAULT_BRIDGE.name]);
    await run("ip", ["link", "set", DEFAULT_BRIDGE.name, "up"]);
    // the engine's disk: an ext4 without blocks reserved for root (the engine runs as root and would
    // use them), in a sparse file; the loop device goes with the unmount
    const image = path.join(dir, "engine.img");
    await run("truncate", ["-s", `${sizeMb}M`, image]);
    await run("mkfs.ext4", ["-q", "-F", "-m", "0", image]);
    await mkdir(dataRoot);
    await run("mount", ["-o", "loop", image, dataRoot]);
    // its own settings file: the machine's /etc/docker/daemon.json is the other engine's
    const config = path.join(dir, "daemon.json");
    await writeFile(config, JSON.stringify({ "default-address-pools": [ADDRESS_POOL] }));
    const log = openSync(logFile, "a");
    child = spawn(
      "dockerd",
      [
        "--config-file",
        config,
        "--data-root",
        dataRoot,
        "--exec-root",
        execRoot,
        "--pidfile",
        path.join(dir, "docker.pid"),
        "-H",
        `unix://${socket}`,
        `--bridge=${DEFAULT_BRIDGE.name}`,
        "--iptables=false",
        "--ip6tables=false",
      ],
      { stdio: ["ignore", log, log] },
    );
    closeSync(log);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`dockerd exited (${child.exitCode})`);
      if (await docker(["version", "--format", "{{.Server.Version}}"]).catch(() => "")) break;
      if (Date.now() > deadline) throw new Error("dockerd did not answer in 60 s");
      await new Promise((r) => setTimeout(r, 200));
    }
    // the machine's engine's default bridge is as it was (see DEFAULT_BRIDGE)
    if ((await docker0Index()) !== docker0)
      throw new Error("the host's docker0 changed as this engine started");
  } catch (err) {
    const tail = await readFile(logFile, "utf8").catch(() => "");
    await stop().catch(() => undefined);
    throw new Error(`the test's own engine did not start: ${String(err)}\n${tail.slice(-3000)}`);
  }

  return {
    socket,
    runcRoot: path.join(execRoot, "runtime-runc", "moby"),
    dataRoot,
    docker,
    async load(images) {
      for (const image of images)
        await run("bash", [
          "-c",
          'set -o pipefail; docker save "$1" | docker -H "unix://$2" load',
          "bash",
          image,
          socket,
        ]);
    },
    async fill() {
      // one allocation for nearly all of it, then writes for what its rounding left
      const left = await bytesLeft();
      await run("fallocate", ["-l", String(left), fillers[0] ?? ""]).catch(() => undefined);
      await run("sh", [
        "-c",
        'head -c 1073741824 /dev/zero > "$1" 2>/dev/null; sync',
        "sh",
        fillers[1] ?? "",
      ]).catch(() => undefined);
      return bytesLeft();
    },
    async free() {
      for (const f of fillers) await rm(f, { force: true });
      await run("sync");
      return bytesLeft();
    },
    logTail: async () => (await readFile(logFile, "utf8").catch(() => "")).slice(-4000),
    stop,
  };
}

/** the host's `docker0`'s interface index, "" without one */
const docker0Index = async () =>
  (await readFile("/sys/class/net/docker0/ifindex", "utf8").catch(() => "")).trim();
