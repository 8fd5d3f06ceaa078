import { createHash } from "node:crypto";
import { access } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CappedBytes } from "../../agent/docker/capped";
import { createDockerClient } from "../../agent/docker/client";
import { execInContainer } from "../../agent/docker/exec";
import { type StreamExecutor, streamExecutor } from "../../agent/docker/exec-stream";
import { podNames } from "../../agent/docker/naming";
import { SH } from "../../agent/docker/pod-bin";
import { DOCKER_RUNC_ROOT, RuncContainers } from "../../agent/docker/runc";
import { FileReceiver } from "../../agent/files/receive";
import { createRelayClient } from "../../agent/transfer/relay";
import { DOCKER_SOCKET, removePrefix, settledWithin, startBareContainer } from "./helpers";

/**
 * An upload's bytes into a pod: through `runc exec` the host's curl writes straight into the
 * pod's process (exec-stream's `inlet`, curl's stdout), with no byte read by the agent or copied by
 * runc; through the engine's exec the agent pipes curl's stdout into the exec's stdin. A double
 * of the control plane's `GET /agent/relay/{id}` on 127.0.0.1 stands in for the Worker.
 */

const IMAGE = "podhost/static:latest";
const TOKEN = "host-token-upload-inlet-test";
const ID = "host-1/7d0c1f52-3b7e-4a8e-9d2c-0e6f4b1a2c3d";
const SMALL = Buffer.from(`0:1:${"ab".repeat(2048)}`);
const LARGE = Buffer.alloc(8 * 1024 * 1024);
for (let i = 0; i < LARGE.length; i += 4096) LARGE.writeUInt32LE(i, i);

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const opts = () => ({ signal: new AbortController().signal, timeoutS: 30 });

describe("an upload's bytes into a pod's process", () => {
  const docker = createDockerClient(DOCKER_SOCKET);
  const prefix = `phi${Math.random().toString(36).slice(2, 8)}`;
  const pod = "inlet";
  const names = podNames(prefix, pod);
  let server: http.Server;
  let base: string;
  let payload = SMALL;
  let runc: RuncContainers | null = null;
  const relay = () => createRelayClient(base, TOKEN);

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.headers.authorization !== `Bearer ${TOKEN}` || req.url !== `/agent/relay/${ID}`) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-length": String(payload.length) });
      res.end(payload);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await startBareContainer(docker, names, prefix, IMAGE);
    const known = await access(DOCKER_RUNC_ROOT).then(
      () => true,
      () => false,
    );
    runc = known ? new RuncContainers(docker, DOCKER_RUNC_ROOT) : null;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await removePrefix(docker, prefix);
  });

  /** a process of `script` fed by an inlet */
  const reader = async (exec: StreamExecutor, script: string, signal?: AbortSignal) => {
    const run = await exec(names.container, [SH, "-c", script], { inlet: true, signal });
    const out = new CappedBytes(4096);
    run.stdout.on("data", out.push);
    return { run, out, drained: finished(run.stdout).catch(() => undefined) };
  };

  for (const [size, body] of [
    ["small", SMALL],
    ["8 MiB", LARGE],
  ] as const) {
    it(`through runc exec, a ${size} body arrives whole, also when curl exits before the process reads`, async (t) => {
      if (!runc) t.skip();
      payload = body;
      const { run, out, drained } = await reader(streamExecutor(docker, runc), "sleep 1; sha256sum");
      expect(run.inlet).toBeDefined();
      const pipe = relay().pipe(ID, { ...opts(), into: run.inlet });
      expect(pipe.body).toBeUndefined(); // nothing of it passes through the agent
      expect((await pipe.done).size).toBe(body.length); // a small one: curl exited, nothing read yet
      expect((await run.done).exitCode).toBe(0);
      await drained;
      expect(out.text().split(" ")[0]).toBe(sha(body));
    });
  }

  it("through runc exec, stop() settles when the process never reads an 8 MiB body", async (t) => {
    if (!runc) t.skip();
    payload = LARGE;
    const abort = new AbortController();
    const { run } = await reader(streamExecutor(docker, runc), "exec sleep 60", abort.signal);
    const pipe = relay().pipe(ID, { ...opts(), into: run.inlet });
    await new Promise((resolve) => setTimeout(resolve, 500)); // curl fills the pipe; nobody reads
    pipe.stop();
    const settled = await settledWithin(pipe.done, 5_000);
    expect(settled).toBe("rejected");
    abort.abort();
    await run.done;
  });

  for (const way of ["runc exec", "the engine's exec"] as const) {
    it(`receives and commits a file whole through ${way}`, async (t) => {
      if (way === "runc exec" && !runc) t.skip();
      payload = LARGE;
      const exec = streamExecutor(docker, way === "runc exec" ? runc : null);
      const files = new FileReceiver(exec, prefix);
      const dir = "/home/pod_user/up";
      const got = await files.receive(pod, { dir, relay: ID, client: relay() }, new AbortController().signal);
      expect(got.size).toBe(LARGE.length);
      await files.commit(pod, { temp: got.temp, path: `${dir}/f.bin`, parent: dir, size: got.size });
      const r = await execInContainer(docker, names.container, [
        SH,
        "-c",
        `sha256sum ${dir}/f.bin; ls -A ${dir}`,
      ]);
      expect(r.stdout).toBe(`${sha(LARGE)}  ${dir}/f.bin\nf.bin\n`);
    });
  }
});
