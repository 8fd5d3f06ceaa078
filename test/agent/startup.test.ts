import { access, chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { Ingress } from "../../agent/ingress/nginx";
import { createLogger } from "../../agent/logger";
import { startAgent } from "../../agent/main";
import { freePort, TEST_EDGE_SECRET, until } from "./helpers";

/**
 * The agent's start (agent/main.ts) against a control plane of the test's own: the hello goes out
 * while the start's checks still run, saying the host takes no pods, and the host's state follows
 * once they are done. The probe: `nginx` on the agent's PATH is a wrapper whose `-t` (the ingress's
 * config test, one of those checks) waits until the test lets it go.
 */

type Message = { type: string; problem?: string | null; inventory?: unknown[] };

let dir: string;
let server: WebSocketServer;
let received: Message[];
let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
let starting: Promise<Awaited<ReturnType<typeof startAgent>>>;
const path = process.env.PATH;

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "podhost-startup-test-"));
  // `nginx -t` says it started, then waits for the release file; everything else is nginx itself
  const bin = join(dir, "bin");
  await mkdir(bin);
  await writeFile(
    join(bin, "nginx"),
    `#!/bin/sh
case " $* " in *" -t "*)
  touch ${dir}/test-started
  while [ ! -e ${dir}/test-release ]; do sleep 0.05; done;;
esac
exec /usr/sbin/nginx "$@"
`,
  );
  await chmod(join(bin, "nginx"), 0o755);
  process.env.PATH = `${bin}:${path}`;

  received = [];
  const port = await freePort();
  server = new WebSocketServer({ host: "127.0.0.1", port, path: "/agent/connect" });
  server.on("connection", (ws) => {
    ws.on("message", (raw) => {
      const message = JSON.parse(raw.toString()) as Message;
      received.push(message);
      if (message.type === "agent:hello")
        ws.send(JSON.stringify({ type: "control:welcome", hostId: "host_test", orphans: [] }));
    });
  });
  starting = startAgent({
    PODHOST_API_URL: `http://127.0.0.1:${port}`,
    PODHOST_AGENT_TOKEN: "hat_startup_test",
    PODHOST_STATE_DIR: join(dir, "state"),
    PODHOST_INGRESS_LISTEN: `127.0.0.1:${await freePort()}`,
    PODHOST_SSH_LISTEN_HOST: "127.0.0.1",
    PODHOST_NAME_PREFIX: `st${Date.now().toString(36).slice(-6)}`,
    PODHOST_POD_DISK_ROOT: "",
  });
});

afterAll(async () => {
  process.env.PATH = path;
  await writeFile(join(dir, "test-release"), "").catch(() => undefined);
  agent = await starting.catch(() => undefined);
  await agent?.stop();
  const log = createLogger({ test: "startup" }, true);
  await new Ingress({
    stateDir: join(dir, "state"),
    listen: "127.0.0.1:9",
    edgeSecret: TEST_EDGE_SECRET,
    log,
  })
    .stop()
    .catch(() => undefined);
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the agent's start", () => {
  it("says hello while its ingress check runs, taking no pods; the host's state follows once the checks are done", async () => {
    // `nginx -t` runs and is held; the hello comes meanwhile (the socket and the hello do not wait for it)
    expect(await until(() => exists(join(dir, "test-started")), 20_000, 20)).toBe(true);
    const hello = await until(async () => received.find((m) => m.type === "agent:hello"), 10_000, 20);
    if (!hello) throw new Error("no hello while nginx -t was held");
    expect(await exists(join(dir, "test-release"))).toBe(false);
    expect(hello.problem).toMatch(/starting/);
    expect(hello.inventory).toEqual([]);
    // nothing says the host takes pods while the check is held
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.filter((m) => m.type === "agent:host-health" && m.problem === null)).toEqual([]);

    await writeFile(join(dir, "test-release"), "");
    agent = await starting;
    const ready = await until(
      async () => received.find((m) => m.type === "agent:host-health" && m.problem === null),
      20_000,
      20,
    );
    if (!ready) throw new Error("the host's state did not follow within 20 s");
    expect(ready).toEqual({ type: "agent:host-health", problem: null });
    expect(received.indexOf(ready)).toBeGreaterThan(received.indexOf(hello));
  });
});
