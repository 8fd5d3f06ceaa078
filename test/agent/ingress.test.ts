import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ingress } from "../../agent/ingress/nginx";
import { renderVhost, STANDBY_PORT } from "../../agent/ingress/vhost";
import { createLogger } from "../../agent/logger";
import { edgeHeaders } from "../support/edge";
import { freePort, httpGet, TEST_EDGE_SECRET, until } from "./helpers";

/** The agent's own nginx, without pods: an upstream that is this test's own HTTP server. */

const log = createLogger({ test: "ingress" }, true);
let dir: string;
let port: number;
let ingress: Ingress;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "podhost-ingress-test-"));
  port = await freePort();
  ingress = new Ingress({ stateDir: dir, listen: `127.0.0.1:${port}`, edgeSecret: TEST_EDGE_SECRET, log });
  await ingress.start();
});

afterAll(async () => {
  await ingress?.stop();
  await rm(dir, { recursive: true, force: true });
});

const vhost = (pod: string, ip = "127.0.0.1", p = 9) => ({
  pod,
  podId: `pod_${pod}`,
  domains: [`${pod}.pods.test`],
  ip,
  port: p,
});

/** curl's `-H` arguments of the edge's proof for `/` of `host` */
const signedCurlHeaders = (method: string, host: string) =>
  Object.entries(edgeHeaders(TEST_EDGE_SECRET, { method, host, path: "/" })).flatMap(([k, v]) => [
    "-H",
    `${k}: ${v}`,
  ]);

describe("Ingress", () => {
  it("answers unknown hosts with 404 from the default server", async () => {
    const res = await httpGet(port, "unknown.pods.test");
    expect(res.status).toBe(404);
    expect(res.headers["x-podhost-ingress"]).toBe("default");
  });

  it("routes a domain once its vhost is rendered, and stops routing it once removed", async () => {
    await ingress.upsert(vhost("alpha"));
    // nothing listens on :9: the vhost's own mark on nginx's 502 proves it (not the default server) answered
    const res = await httpGet(port, "alpha.pods.test");
    expect(res.status).toBe(502);
    expect(res.headers["x-podhost-ingress"]).toBe("unavailable");
    await ingress.remove("alpha");
    expect((await httpGet(port, "alpha.pods.test")).status).toBe(404);
    await ingress.remove("alpha"); // absent is fine
  });

  it("reuses a running master: a second agent start does not start another nginx", async () => {
    const pid = await ingress.masterPid();
    expect(pid).toBeGreaterThan(0);
    const again = new Ingress({
      stateDir: dir,
      listen: `127.0.0.1:${port}`,
      edgeSecret: TEST_EDGE_SECRET,
      log,
    });
    await again.start();
    expect(await again.masterPid()).toBe(pid);
  });

  it("restores the previous file when nginx -t fails, and the other vhosts keep working", async () => {
    await ingress.upsert(vhost("beta"));
    const good = await readFile(ingress.vhostPath("beta"), "utf8");
    // a broken neighbour makes every config test fail
    const broken = join(ingress.dir, "vhosts", "zz-broken.conf");
    await writeFile(broken, "server { this is not nginx }\n");
    await expect(ingress.upsert(vhost("beta", "127.0.0.2"))).rejects.toThrow(/nginx/);
    expect(await readFile(ingress.vhostPath("beta"), "utf8")).toBe(good);
    await expect(ingress.upsert(vhost("gamma"))).rejects.toThrow(/nginx/);
    expect(await ingress.hasVhost("gamma")).toBe(false);
    await rm(broken);
    expect((await httpGet(port, "beta.pods.test")).status).toBe(502);
  });

  it("serialises concurrent changes", async () => {
    const pods = ["c1", "c2", "c3", "c4", "c5"];
    await Promise.all(pods.map((p) => ingress.upsert(vhost(p))));
    for (const p of pods) expect((await httpGet(port, `${p}.pods.test`)).status).toBe(502);
    await Promise.all(pods.map((p) => ingress.remove(p)));
    for (const p of pods) expect((await httpGet(port, `${p}.pods.test`)).status).toBe(404);
  });

  it("coalesces a burst of vhost changes into a few reloads; each caller hears when nginx uses its change", async () => {
    const pods = Array.from({ length: 12 }, (_, i) => `burst${i}`);
    await ingress.upsert(vhost("burst-warm")); // the burst starts right after a reload
    const before = ingress.reloads;
    // 12 pods changed at once, then each changed again (a token rotated in a loop)
    await Promise.all(pods.map((p) => ingress.upsert(vhost(p))));
    const first = ingress.reloads - before;
    expect(first).toBeGreaterThanOrEqual(1);
    expect(first).toBeLessThanOrEqual(2);
    for (const p of pods) expect((await httpGet(port, `${p}.pods.test`)).status).toBe(502);
    // each pod changed twice at once: one reload or two for all of it
    const again = ingress.reloads;
    await Promise.all(
      pods.flatMap((p) => [ingress.upsert(vhost(p, "127.0.0.3")), ingress.upsert(vhost(p, "127.0.0.4"))]),
    );
    expect(ingress.reloads - again).toBeLessThanOrEqual(2);
    const removed = ingress.reloads;
    await Promise.all(pods.map((p) => ingress.remove(p)));
    expect(ingress.reloads - removed).toBeLessThanOrEqual(2);
    for (const p of pods) expect((await httpGet(port, `${p}.pods.test`)).status).toBe(404);
    // a change that leaves the file as it is costs no reload
    const idle = ingress.reloads;
    await ingress.upsert(vhost("burst-warm"));
    expect(ingress.reloads).toBe(idle);
    await ingress.remove("burst-warm");
  });

  it("a batch that fails nginx -t: every file put back, each change tried alone, the callers told", async () => {
    const broken = join(ingress.dir, "vhosts", "zz-broken-batch.conf");
    await writeFile(broken, "server { this is not nginx }\n");
    try {
      const results = await Promise.allSettled(["bad1", "bad2", "bad3"].map((p) => ingress.upsert(vhost(p))));
      expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
      for (const p of ["bad1", "bad2", "bad3"]) expect(await ingress.hasVhost(p)).toBe(false);
    } finally {
      await rm(broken);
    }
    // the queue goes on
    await ingress.upsert(vhost("bad1"));
    expect((await httpGet(port, "bad1.pods.test")).status).toBe(502);
    await ingress.remove("bad1");
  });

  it("a batch that cannot even be put back tells its callers instead of leaving them waiting", async () => {
    // a directory where the vhost file goes: writing fails, and so does putting "no file" back
    const blocked = ingress.vhostPath("blocked");
    await mkdir(blocked);
    try {
      const outcome = await Promise.race([
        ingress.upsert(vhost("blocked")).then(
          () => "resolved",
          () => "rejected",
        ),
        new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5_000)),
      ]);
      expect(outcome).toBe("rejected");
    } finally {
      await rm(blocked, { recursive: true });
    }
    // the queue goes on
    await ingress.upsert(vhost("blocked"));
    await ingress.remove("blocked");
  });

  it("starts the master again when it is gone", async () => {
    const pid = await ingress.masterPid();
    process.kill(pid ?? 0, "SIGTERM"); // fast shutdown: master and workers exit
    await until(async () => (await ingress.masterPid()) === null, 5000, 20);
    await ingress.upsert(vhost("delta"));
    expect(await ingress.masterPid()).not.toBe(pid);
    expect((await httpGet(port, "delta.pods.test")).status).toBe(502);
  });

  it("hands a slow client a large response whole, streaming it without temp files", async () => {
    // A response larger than nginx's memory buffers, read slowly: nginx must not spill it to its
    // temp dir (its workers, as nobody, may not reach it, and a tenant's slow readers could fill
    // the host's disk), only pass it on as the client reads.
    const size = 24 * 1024 * 1024;
    const body = Buffer.alloc(size, 97);
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/javascript", "content-length": size });
      res.end(body);
    });
    const upstreamPort = await freePort();
    await new Promise<void>((resolve) => upstream.listen(upstreamPort, "127.0.0.1", resolve));
    try {
      await ingress.upsert(vhost("big", "127.0.0.1", upstreamPort));
      const { stdout } = await promisify(execFile)("curl", [
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{size_download}",
        "--limit-rate",
        "8M",
        "-H",
        "Host: big.pods.test",
        ...signedCurlHeaders("GET", "big.pods.test"),
        `http://127.0.0.1:${port}/`,
      ]);
      expect(stdout).toBe(`200 ${size}`);
    } finally {
      await ingress.remove("big");
      upstream.close();
    }
  });

  it("streams a large request body to the pod whole, without temp files", async () => {
    // A visitor's upload larger than nginx's memory buffer: passed on as it arrives, never written to
    // the ingress's temp dir (which its workers, as nobody, may not reach under a private state dir,
    // and where visitors' uploads to many pods at once could fill the host's disk).
    const size = 20 * 1024 * 1024;
    const file = join(await mkdtemp(join(tmpdir(), "podhost-ingress-body-")), "body");
    await writeFile(file, Buffer.alloc(size, 98));
    let received = 0;
    const upstream = createServer((req, res) => {
      req.on("data", (chunk: Buffer) => {
        received += chunk.length;
      });
      req.on("end", () => res.end(String(received)));
    });
    const upstreamPort = await freePort();
    await new Promise<void>((resolve) => upstream.listen(upstreamPort, "127.0.0.1", resolve));
    try {
      await ingress.upsert(vhost("upload", "127.0.0.1", upstreamPort));
      const { stdout } = await promisify(execFile)("curl", [
        "-sS",
        "-w",
        " %{http_code}",
        "--data-binary",
        `@${file}`,
        "-H",
        "Host: upload.pods.test",
        ...signedCurlHeaders("POST", "upload.pods.test"),
        `http://127.0.0.1:${port}/`,
      ]);
      expect(stdout).toBe(`${size} 200`);
      expect(await readdir(join(ingress.dir, "tmp", "client_body"))).toEqual([]);
    } finally {
      await ingress.remove("upload");
      upstream.close();
      await rm(join(file, ".."), { recursive: true, force: true });
    }
  });

  it("sends a request to the pod's standby port only while its own port refuses, trying its own first every time", async () => {
    const serve = (body: string, status = 200) =>
      createServer((_q, r) => {
        r.statusCode = status;
        r.end(body);
      });
    const listen = (srv: ReturnType<typeof createServer>, p: number) =>
      new Promise<void>((resolve) => srv.listen(p, "127.0.0.1", resolve));
    const close = (srv: ReturnType<typeof createServer>) => {
      srv.closeAllConnections();
      return new Promise<void>((resolve) => srv.close(() => resolve()));
    };
    const appPort = await freePort();
    let app = serve("app");
    const standby = serve("standby");
    await listen(app, appPort);
    await listen(standby, STANDBY_PORT);
    try {
      await ingress.upsert(vhost("delta", "127.0.0.1", appPort));
      expect((await httpGet(port, "delta.pods.test")).body).toBe("app");
      // the app restarts: its port refuses, the standby answers every request meanwhile
      await close(app);
      for (let i = 0; i < 5; i++) expect((await httpGet(port, "delta.pods.test")).body).toBe("standby");
      // back at once (a refusal never marks the app's port down for the next 10 s)
      app = serve("app");
      await listen(app, appPort);
      expect((await httpGet(port, "delta.pods.test")).body).toBe("app");
      // during a deploy the standby goes first: it answers while the app still does
      await ingress.upsert({ ...vhost("delta", "127.0.0.1", appPort), standbyFirst: true });
      expect((await httpGet(port, "delta.pods.test")).body).toBe("standby");
      await ingress.upsert(vhost("delta", "127.0.0.1", appPort));
      expect((await httpGet(port, "delta.pods.test")).body).toBe("app");
      // an answer of any status is the app's own: an error is not retried on the standby
      await close(app);
      app = serve("app failed", 500);
      await listen(app, appPort);
      const failed = await httpGet(port, "delta.pods.test");
      expect([failed.status, failed.body]).toEqual([500, "app failed"]);
      // nothing on either port: nginx's 502
      await close(app);
      await close(standby);
      expect((await httpGet(port, "delta.pods.test")).status).toBe(502);
    } finally {
      await Promise.all([close(app), close(standby)].map((p) => p.catch(() => undefined)));
      await ingress.remove("delta");
    }
  });

  it("refuses values that would inject nginx directives", () => {
    const listen = "127.0.0.1:1";
    expect(() => renderVhost(listen, { ...vhost("x"), domains: ["a.test; include /etc/passwd"] })).toThrow();
    expect(() => renderVhost(listen, { ...vhost("x"), domains: ["a.test\n"] })).toThrow();
    expect(() => renderVhost(listen, { ...vhost("x"), ip: "1.2.3.4;" })).toThrow();
    expect(() => renderVhost(listen, { ...vhost("x"), podId: "p\n}" })).toThrow();
  });
});

describe("Ingress: only the edge gets in (docs/edge.md)", () => {
  /** raw GET to the ingress with exactly these headers */
  const raw = (headers: Record<string, string>, path = "/") =>
    new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path, headers, timeout: 5000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            headers: res.headers,
          }),
        );
      });
      req.on("error", reject);
      req.end();
    });
  let echo: ReturnType<typeof createServer>;
  const host = "echo.pods.test";

  beforeAll(async () => {
    // the app: answers with the headers it was given
    echo = createServer((req, res) => res.end(JSON.stringify(req.headers)));
    const echoPort = await freePort();
    await new Promise<void>((resolve) => echo.listen(echoPort, "127.0.0.1", resolve));
    await ingress.upsert(vhost("echo", "127.0.0.1", echoPort));
  });
  afterAll(async () => {
    await ingress.remove("echo");
    echo.close();
  });

  it("serves a request with the edge's proof, and the app sees the visitor's address the edge signed", async () => {
    const res = await raw({
      host: "10.0.0.1",
      // a visitor's own forwarded headers, which the edge passes on and the ingress must not believe
      "x-forwarded-for": "6.6.6.6",
      "cf-connecting-ip": "6.6.6.6",
      "x-real-ip": "6.6.6.6",
      ...edgeHeaders(TEST_EDGE_SECRET, { host, path: "/", client: "203.0.113.9", proto: "https" }),
    });
    expect(res.status).toBe(200);
    const seen = JSON.parse(res.body) as Record<string, string | undefined>;
    expect(seen.host).toBe(host);
    expect(seen["x-forwarded-for"]).toBe("203.0.113.9");
    expect(seen["cf-connecting-ip"]).toBe("203.0.113.9");
    expect(seen["x-real-ip"]).toBe("203.0.113.9");
    expect(seen["x-forwarded-proto"]).toBe("https");
    // the proof does not reach the app, so the app cannot replay it
    expect(seen["x-podhost-edge-proof"]).toBeUndefined();
    expect(seen["x-podhost-client-ip"]).toBeUndefined();
  });

  it("refuses with 403 a request without a proof, even for a host it serves", async () => {
    const res = await raw({ host });
    expect(res.status).toBe(403);
    expect(res.headers["x-podhost-ingress"]).toBe("forbidden");
    expect((await raw({ host, "x-podhost-host": host })).status).toBe(403);
  });

  it("refuses a proof under another secret, an expired one, and one moved to another host, path or address", async () => {
    const signed = (over: { path?: string }, secret = TEST_EDGE_SECRET) =>
      edgeHeaders(secret, { host, path: "/", client: "203.0.113.9", ...over });
    expect((await raw(signed({}, "0".repeat(64)))).status).toBe(403);
    const good = signed({});
    expect((await raw({ ...good, "x-podhost-host": "alpha.pods.test" })).status).toBe(403);
    expect((await raw(good, "/admin")).status).toBe(403);
    expect((await raw({ ...good, "x-podhost-client-ip": "6.6.6.6" })).status).toBe(403);
    expect((await raw({ ...good, "x-forwarded-proto": "https" })).status).toBe(403);
    expect(
      (await raw({ ...good, "x-podhost-edge-expires": String(Math.floor(Date.now() / 1000) - 5) })).status,
    ).toBe(403);
    // the same proof, unchanged, is fine: what failed above was the change
    expect((await raw(good)).status).toBe(200);
  });
});
