import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Forget the host's failed neighbour (ARP) entry for `ip`, if it has one. A vhost rendered before
 * its container had the address (the create routes while the container starts) may have sent a
 * visitor's request there: the lookup failed, and until the kernel tries again every connection
 * to the pod stalls (most of a second, measured). Incomplete entries read `0x0` in /proc/net/arp;
 * deleting one makes the next packet look again. Nothing to do (no process) in the usual case.
 */
export async function forgetFailedNeighbour(ip: string): Promise<void> {
  const table = await readFile("/proc/net/arp", "utf8").catch(() => "");
  for (const line of table.split("\n").slice(1)) {
    const [address, , flags, , , device] = line.trim().split(/\s+/);
    if (address !== ip || flags !== "0x0" || !device) continue;
    await run("ip", ["neigh", "del", ip, "dev", device]).catch(() => undefined);
  }
}
