import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { promisify } from "node:util";

const run = promisify(execFile);
const ip = async (...args: string[]) => (await run("ip", args)).stdout;

/**
 * A small network of the test's own on this machine, for a pod to try to reach:
 *
 * - `outside`: a network namespace behind a veth, routed from the host, holding a documentation-range
 *   address (198.51.100.2, "the public internet") and a link-local, RFC 1918 and CGNAT address —
 *   reached from a pod through the host's FORWARD path, as other machines would be;
 * - `host`: link-local and RFC 1918 addresses on the host's end of that veth — addresses of the host
 *   itself, reached through INPUT (as a dummy interface's would be; this kernel has no `dummy`).
 *
 * Every address is checked free before and routed to our own interfaces after setup; anything else
 * aborts, so no packet of a test can leave this machine whatever the firewall says.
 */
export const OUTSIDE = {
  public: "198.51.100.2",
  private10: "10.254.77.2",
  private192: "192.168.254.77",
  cgnat: "100.64.77.2",
  linkLocal: "169.254.77.2",
};
export const HOST_LOCAL = {
  linkLocal: "169.254.78.1",
  private10: "10.254.78.1",
  private192: "192.168.254.78",
};
const HOST_SIDE = "198.51.100.1";
const RANGES_IN_USE = ["198.51.100.", "10.254.", "192.168.254.", "100.64.77.", "169.254."];
export const LAB_PORT = 8099;

/** A tiny HTTP server answering `reached <address>` on every address given on its command line. */
const LISTENER = `
const http = require("node:http");
const addrs = process.argv.slice(1);
let up = 0;
for (const a of addrs)
  http.createServer((q, r) => r.end("reached " + a)).listen(${LAB_PORT}, a, () => {
    if (++up === addrs.length) console.log("ready");
  });
`;

export interface NetLab {
  stop(): Promise<void>;
}

export async function startNetLab(): Promise<NetLab> {
  const tag = randomBytes(2).toString("hex");
  const ns = `podhost-egress-${tag}`;
  const [vethHost, vethNs] = [`pheV${tag}`, `pheN${tag}`];
  let listener: ChildProcess | undefined;
  const servers: Server[] = [];
  const stop = async () => {
    listener?.kill("SIGKILL");
    for (const s of servers) s.close();
    // takes the veth pair, its addresses and routes
    await run("ip", ["netns", "del", ns]).catch(() => undefined);
    await run("ip", ["link", "del", vethHost]).catch(() => undefined);
  };

  const before = (await ip("-4", "addr")) + (await ip("-4", "route"));
  const clash = RANGES_IN_USE.find((r) => before.includes(r));
  if (clash) throw new Error(`this machine already uses ${clash}x; the egress lab would collide with it`);

  try {
    await ip("netns", "add", ns);
    await ip("link", "add", vethHost, "type", "veth", "peer", "name", vethNs);
    await ip("link", "set", vethNs, "netns", ns);
    await ip("addr", "add", `${HOST_SIDE}/24`, "dev", vethHost);
    await ip("link", "set", vethHost, "up");
    await ip("-n", ns, "link", "set", "lo", "up");
    await ip("-n", ns, "addr", "add", `${OUTSIDE.public}/24`, "dev", vethNs);
    for (const a of [OUTSIDE.private10, OUTSIDE.private192, OUTSIDE.cgnat, OUTSIDE.linkLocal])
      await ip("-n", ns, "addr", "add", `${a}/32`, "dev", vethNs);
    await ip("-n", ns, "link", "set", vethNs, "up");
    for (const a of [OUTSIDE.private10, OUTSIDE.private192, OUTSIDE.cgnat, OUTSIDE.linkLocal])
      await ip("route", "add", `${a}/32`, "via", OUTSIDE.public, "dev", vethHost);
    for (const a of Object.values(HOST_LOCAL)) await ip("addr", "add", `${a}/32`, "dev", vethHost);

    // The safety net: each address leads into the lab, never to the default route.
    for (const a of Object.values(OUTSIDE)) {
      const route = await ip("route", "get", a);
      if (!route.includes(`dev ${vethHost}`)) throw new Error(`${a} does not route into the lab: ${route}`);
    }
    for (const a of Object.values(HOST_LOCAL)) {
      const route = await ip("route", "get", a);
      if (!route.startsWith("local ")) throw new Error(`${a} is not local: ${route}`);
    }

    listener = spawn(
      "ip",
      ["netns", "exec", ns, process.execPath, "-e", LISTENER, ...Object.values(OUTSIDE)],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    await new Promise<void>((resolve, reject) => {
      listener?.once("exit", (code) => reject(new Error(`the lab's listener exited with ${code}`)));
      listener?.stdout?.on("data", (d: Buffer) => {
        if (d.toString().includes("ready")) resolve();
      });
    });
    for (const a of Object.values(HOST_LOCAL)) servers.push(await listenOn(a, LAB_PORT));
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop };
}

/** An HTTP server of the test process on one address of this host, answering `reached <address>`. */
export function listenOn(address: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((_req, res) => res.end(`reached ${address}`));
    server.once("error", reject);
    server.listen(port, address, () => resolve(server));
  });
}
