/**
 * What bench/density reads off the machine: memory, a process's CPU and RSS, the agent left idle, a
 * bare idle node, and how many pod networks the engine's address pools have left.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { AGENT_NODE_FLAGS } from "../../scripts/build-agent";
import { sleep } from "../../test/e2e/support/stack";
import { docker, IDLE_S, now } from "./settings";

export async function meminfoMb(field: string): Promise<number> {
  const text = await readFile("/proc/meminfo", "utf8");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) / 1024;
}

/** utime + stime of a process and of its reaped children, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const f = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  // fields 14–17 of stat(5): utime stime cutime cstime, in clock ticks (USER_HZ, 100 on Linux)
  return ((f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0)) / 100;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}

const dockerdPid = async () =>
  Number((await readFile("/var/run/docker.pid", "utf8").catch(() => "0")).trim());

export interface Idle {
  cpuPercent: number;
  dockerdPercent: number;
  rssMb: number;
}

/** The agent left alone for `IDLE_S`: its CPU as a share of one core, its largest RSS reading. */
export async function idleWindow(agentPid: number): Promise<Idle> {
  const enginePid = await dockerdPid();
  const t0 = now();
  const [a0, d0] = await Promise.all([cpuSeconds(agentPid), enginePid ? cpuSeconds(enginePid) : 0]);
  const readings: number[] = [];
  while (now() - t0 < IDLE_S * 1000) {
    readings.push(await rssMb(agentPid));
    await sleep(Math.min(5_000, IDLE_S * 1000 - (now() - t0)));
  }
  const [a1, d1] = await Promise.all([cpuSeconds(agentPid), enginePid ? cpuSeconds(enginePid) : 0]);
  const wall = (now() - t0) / 1000;
  return {
    cpuPercent: ((a1 - a0) / wall) * 100,
    dockerdPercent: ((d1 - d0) / wall) * 100,
    rssMb: Math.max(...readings, await rssMb(agentPid)),
  };
}

/** A bare node with the agent's flags, idle: its RSS after a second. */
export async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, "-e", "setInterval(() => {}, 1000)"], {
    stdio: "ignore",
  });
  await sleep(1_000);
  const mb = await rssMb(child.pid ?? 0);
  child.kill("SIGTERM");
  return mb;
}

export interface Pool {
  base: number;
  baseBits: number;
  size: number;
}

const ipv4 = (s: string) => s.split(".").reduce((n, part) => n * 256 + Number(part), 0);
const cidr = (s: string): [number, number] => {
  const [addr = "", bits = "32"] = s.split("/");
  return [ipv4(addr), Number(bits)];
};

/** The engine's default address pools (daemon.json), else Docker's built-in ones. */
export async function addressPools(): Promise<Pool[]> {
  const raw = await readFile("/etc/docker/daemon.json", "utf8").catch(() => "{}");
  const configured = (JSON.parse(raw) as { "default-address-pools"?: { base: string; size: number }[] })[
    "default-address-pools"
  ];
  const pools = configured ?? [
    { base: "172.17.0.0/12", size: 16 },
    { base: "192.168.0.0/16", size: 20 },
  ];
  return pools.map((p) => {
    const [base, baseBits] = cidr(p.base);
    return { base, baseBits, size: p.size };
  });
}

/** How many more networks the pools can give: their size less the subnets in them that are taken. */
export async function networksLeft(pools: Pool[]): Promise<number> {
  const subnets = (await docker.listNetworks()).flatMap((n) =>
    (n.IPAM?.Config ?? []).map((c) => c.Subnet).filter((s): s is string => !!s && s.includes(".")),
  );
  let left = 0;
  for (const p of pools) {
    const mask = p.baseBits === 0 ? 0 : (0xffffffff << (32 - p.baseBits)) >>> 0;
    const inPool = subnets.filter((s) => (cidr(s)[0] & mask) >>> 0 === (p.base & mask) >>> 0).length;
    left += Math.max(0, 2 ** (p.size - p.baseBits) - inPool);
  }
  return left;
}
