import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { createBlobStore } from "../../agent/transfer/blobs";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * A pod's home exported to the control plane (`pod.clone.export`: a clone across hosts, a move's
 * pre-copy) whose upload is cut mid-way, as a Worker's restart cuts it, and then asked again, as the
 * workflow's step asks it. The engine holds the container's lock until an archive it serves is read
 * to its end or closed; an archive left open by the cut upload held it for good, so the second
 * export (and every other archive of the pod) waited until the command's timeout
 * (test/chaos/clone-across.test.ts found it). Against a real engine, and a control plane on
 * 127.0.0.1 that cuts the first upload after its first bytes and takes the second.
 */

const SIZE_MB = 8;
let agent: Agent;
let handlers: HandlerTable;
let server: Server;
const pod = podSpec("exported");
/** what each PUT the control plane got: "cut" or the bytes it took whole */
const puts: (string | number)[] = [];

const drain = (req: IncomingMessage) =>
  new Promise<number>((resolve, reject) => {
    let n = 0;
    req.on("data", (c: Buffer) => {
      n += c.length;
    });
    req.on("end", () => resolve(n));
    req.on("error", reject);
  });

beforeAll(async () => {
  agent = await startAgent();
  server = createServer((req, res) => {
    if (puts.length === 0) {
      // the first upload: its first bytes arrive, then the connection is cut (a restart)
      puts.push("cut");
      req.once("data", () => req.socket.destroy());
      return;
    }
    void drain(req).then((n) => {
      puts.push(n);
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ size: n }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handlers = createHandlers({ ...agent, blobs: createBlobStore(url, "test-token") });
  await handlers["pod.create"](pod, agent.ctx);
  const container = podNames(agent.config.namePrefix, pod.name).container;
  // incompressible and far over the socket's buffers: the engine is mid-way when the cut comes
  const filled = await execInContainer(agent.docker, container, [
    "sh",
    "-c",
    `head -c ${SIZE_MB * 1024 * 1024} /dev/urandom > /home/pod_user/app/big.bin`,
  ]);
  expect(filled.exitCode, filled.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await agent?.cleanup();
});

describe("pod.clone.export cut mid-upload", () => {
  it("fails as the control plane's, and asked again it sends the whole home", async () => {
    const key = "staging/host_test/00000000-0000-4000-8000-000000000001";
    await expect(
      handlers["pod.clone.export"]({ name: pod.name, blobKey: key }, agent.ctx),
    ).rejects.toMatchObject({ component: "control_plane" });
    const again = (await Promise.race([
      handlers["pod.clone.export"]({ name: pod.name, blobKey: key }, agent.ctx),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error("the second export did not end within 30 s")), 30_000).unref(),
      ),
    ])) as { bytes: number };
    expect(again.bytes).toBeGreaterThan(SIZE_MB * 1024 * 1024);
    expect(puts).toEqual(["cut", again.bytes]);
  }, 90_000);
});
