import { appendFile, chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ingress } from "../../agent/ingress/nginx";
import { createLogger } from "../../agent/logger";
import { freePort, TEST_EDGE_SECRET, until } from "./helpers";

/**
 * An agent's start with its nginx master already running (agent/ingress/loaded.ts): when the master
 * last loaded the files as they are, the start neither tests nor reloads them; any change makes it do
 * both. `nginx` here is a wrapper that logs its arguments, then runs nginx.
 */

const log = createLogger({ test: "ingress-restart" }, true);
let dir: string;
let calls: string;
let listen: string;

const ingress = () =>
  new Ingress({
    stateDir: dir,
    listen,
    edgeSecret: TEST_EDGE_SECRET,
    log,
    nginxBin: join(dir, "nginx-logged"),
  });
const tests = async () =>
  (await readFile(calls, "utf8").catch(() => "")).split("\n").filter((l) => / -t /.test(`${l} `));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "podhost-ingress-restart-"));
  calls = join(dir, "calls.log");
  listen = `127.0.0.1:${await freePort()}`;
  await writeFile(join(dir, "nginx-logged"), `#!/bin/sh\necho "$*" >> ${calls}\nexec /usr/sbin/nginx "$@"\n`);
  await chmod(join(dir, "nginx-logged"), 0o755);
});

afterAll(async () => {
  await ingress().stop();
  await rm(dir, { recursive: true, force: true });
});

describe("the ingress's start beside a running master", () => {
  it("skips the config test and the reload when the master serves the files as they are, not after a change", async () => {
    const first = ingress();
    await first.start();
    const pid = await first.masterPid();
    expect(pid).not.toBeNull();
    // a vhost added the usual way: tested, reloaded, and recorded once the new workers are up
    await first.upsert({
      pod: "web-1",
      podId: "pod_web1",
      domains: ["web-1.pods.test"],
      ip: "127.0.0.1",
      port: 9,
    });
    await until(
      async () => (await readFile(join(dir, "nginx", "loaded.json"), "utf8").catch(() => "")).length > 0,
    );
    const testsBefore = (await tests()).length;
    expect(testsBefore).toBeGreaterThan(0);

    // the agent starts again: the same master, the same files
    const again = ingress();
    await again.start();
    expect(await again.masterPid()).toBe(pid);
    expect((await tests()).length).toBe(testsBefore);
    expect(again.reloads).toBe(0);

    // a vhost changed behind the record's back: the next start tests the files again
    await appendFile(again.vhostPath("web-1"), "\n# edited by hand\n");
    await ingress().start();
    expect((await tests()).length).toBe(testsBefore + 1);
  });
});
