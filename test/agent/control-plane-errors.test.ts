import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBackupStore } from "../../agent/backups/store";
import { createDockerClient, toAgentError } from "../../agent/docker/client";
import { AgentError } from "../../agent/errors";
import { freePort } from "../e2e/support/stack";

/**
 * Where a failure came from (shared/errors.ts Component): a broken call to the control plane is the
 * control plane's, retried by the workflow (worker/workflows/host-step.ts), never "docker engine
 * unavailable" (issue 28: "backup.verify: docker engine unavailable (connect ECONNREFUSED
 * 127.0.0.1:8787)", 8787 being the control plane).
 */
describe("failures name the component", () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    // a control plane double: /cut sends half its body and hangs up, /bad answers 502, /refuse 409
    server = createServer((req, res) => {
      req.resume();
      if (req.url?.endsWith("/bk_cut")) {
        res.writeHead(200, { "content-length": "1000" });
        res.write("x".repeat(10), () => res.socket?.destroy());
      } else if (req.url?.endsWith("/bk_bad")) {
        res.writeHead(502).end("bad gateway");
      } else {
        res.writeHead(409, { "content-type": "application/json" }).end('{"error":"already checked"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const caught = async (p: Promise<unknown>, what: string) =>
    toAgentError(
      await p.then(
        () => new Error("expected a failure"),
        (e: unknown) => e,
      ),
      what,
    );

  it("a control plane that refuses the connection: unavailable, the control plane's, with the reason", async () => {
    const store = createBackupStore(`http://127.0.0.1:${await freePort()}`, "token");
    const err = await caught(store.read("bk_gone"), "backup.verify");
    expect(err).toMatchObject({ code: "unavailable", component: "control_plane" });
    expect(err.message).toMatch(/^backup\.verify: the control plane could not be reached \(.*ECONNREFUSED/);
    expect(err.message).not.toMatch(/docker/);
  });

  it("an archive that breaks off mid-way while read back: the control plane's", async () => {
    const { body } = await createBackupStore(url, "token").read("bk_cut");
    const err = await caught(
      (async () => {
        for await (const _ of body) {
          // read until it breaks
        }
      })(),
      "backup.verify",
    );
    expect(err).toMatchObject({ code: "unavailable", component: "control_plane" });
  });

  it("a 5xx answer is the control plane's; a refusal (4xx) is an answer, not retried", async () => {
    const store = createBackupStore(url, "token");
    const bad = await caught(store.write("bk_bad", Readable.from([Buffer.from("abc")])), "backup.create");
    expect(bad).toMatchObject({ code: "unavailable", component: "control_plane" });
    expect(bad.message).toContain("control plane answered 502");
    const refused = await caught(store.write("bk_no", Readable.from([Buffer.from("abc")])), "backup.create");
    expect(refused).toBeInstanceOf(AgentError);
    expect(refused.component).toBeUndefined();
    expect(refused.message).toContain("already checked");
  });

  it("an engine that cannot be reached is the engine's, with its reason", async () => {
    const docker = createDockerClient("/nonexistent/podhost-docker.sock");
    const err = await caught(docker.ping(), "pod.create");
    expect(err).toMatchObject({ code: "unavailable", component: "engine" });
    expect(err.message).toMatch(/^pod\.create: docker engine unavailable \(.+\)$/);
  });
});
