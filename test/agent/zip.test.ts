import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { createHandlers } from "../../agent/handlers/pods";
import type { BlobStore } from "../../agent/transfer/blobs";
import { unpackStream } from "../../agent/zip/unpack";
import { bytesReader, inspectZip } from "../../shared/zip/policy";
import { buildZip, siteZip } from "../support/zip";
import { type Agent, httpGet, podSpec, startAgent, until } from "./helpers";

/**
 * The agent's own defenses when unpacking an archive (it trusts no caller: the Worker checked the
 * same archive, but a lying header only shows while inflating), and the unpack into a real pod.
 */

const run = promisify(execFile);

async function writeTemp(bytes: Uint8Array) {
  const dir = await mkdtemp(path.join(tmpdir(), "zip-test-"));
  const file = path.join(dir, "a.zip");
  await writeFile(file, bytes);
  return { dir, file };
}

/** Streams the archive as the agent would into a real `tar -x`; the tar's exit and the stream's failure. */
async function unpackWithTar(bytes: Uint8Array) {
  const manifest = inspectZip(bytesReader(bytes));
  if (!manifest.ok) throw new Error(manifest.message);
  const { dir, file } = await writeTemp(bytes);
  const out = path.join(dir, "out");
  await run("mkdir", [out]);
  const tar = unpackStream(file, manifest.value);
  const chunks: Buffer[] = [];
  let streamError: unknown;
  try {
    for await (const chunk of tar.stream) chunks.push(chunk as Buffer);
  } catch (err) {
    streamError = err;
  }
  const tarFile = path.join(dir, "a.tar");
  await writeFile(tarFile, Buffer.concat(chunks));
  await run("tar", ["-x", "-f", tarFile, "-C", out]).catch(() => undefined);
  return { dir, out, streamError, stats: tar.stats };
}

describe("unpacking: the agent's own checks", () => {
  it("streams files under app/ with their modes and a done mark last", async () => {
    const long = `${"d".repeat(120)}/ünïcode-${"n".repeat(90)}.txt`;
    const bytes = await buildZip([
      { name: "index.html", data: "<h1>hi</h1>" },
      { name: "bin/" },
      { name: "bin/run", data: "#!/bin/sh\necho ok\n", unixMode: 0o100755 },
      { name: long, data: "deep" },
      { name: "empty.txt" },
      { name: "__MACOSX/._index.html", data: "resource fork" },
    ]);
    const { dir, out, streamError, stats } = await unpackWithTar(bytes);
    try {
      expect(streamError).toBeUndefined();
      expect(stats).toEqual({ files: 4, bytes: 11 + 18 + 4 });
      expect(await readFile(path.join(out, "app/index.html"), "utf8")).toBe("<h1>hi</h1>");
      expect(await readFile(path.join(out, "app", long), "utf8")).toBe("deep");
      const { stdout } = await run("stat", ["-c", "%a", path.join(out, "app/bin/run")]);
      expect(stdout.trim()).toBe("755");
      expect((await readdir(out)).sort()).toEqual(["app", "done"]);
      expect(await readdir(path.join(out, "app"))).not.toContain("__MACOSX");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("stops an entry that inflates past the size its headers declare (a bomb with lying headers)", async () => {
    // 8 MiB of zeros that both headers call 1000 bytes: the table of contents looks harmless.
    const bytes = await buildZip([
      { name: "index.html", data: "<h1>ok</h1>" },
      { name: "bomb.bin", data: new Uint8Array(8 * 1024 * 1024), declaredSize: 1000 },
    ]);
    expect(inspectZip(bytesReader(bytes)).ok).toBe(true);
    const { dir, out, streamError } = await unpackWithTar(bytes);
    try {
      expect(String(streamError)).toMatch(/bomb\.bin.*inflates past the 1000 bytes/);
      expect(await readdir(out)).not.toContain("done");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses an entry whose content fails its CRC-32", async () => {
    const bytes = await buildZip([{ name: "index.html", data: "<h1>ok</h1>", crc: 1234 }]);
    const { dir, streamError } = await unpackWithTar(bytes);
    await rm(dir, { recursive: true, force: true });
    expect(String(streamError)).toMatch(/CRC-32/);
  });

  it("checks the table of contents itself (zip-slip, absolute paths, links)", async () => {
    for (const [entry, reason] of [
      [{ name: "../evil.sh", data: "x" }, /zip-slip/],
      [{ name: "/etc/cron.d/x", data: "x" }, /absolute/],
      [{ name: "link", data: "/etc/passwd", unixMode: 0o120777 }, /symbolic link/],
    ] as const) {
      const result = inspectZip(bytesReader(await buildZip([{ name: "index.html", data: "x" }, entry])));
      expect(result.ok ? "accepted" : result.message, entry.name).toMatch(reason);
    }
  });
});

describe("unpacking into a pod", () => {
  let agent: Agent;
  let handlers: ReturnType<typeof createHandlers>;
  const staged = new Map<string, Uint8Array>();
  const blobs: BlobStore = {
    async fetch(key) {
      const bytes = staged.get(key);
      if (!bytes) throw new Error(`no blob ${key}`);
      return { body: Readable.from([Buffer.from(bytes)]), size: bytes.length };
    },
    upload: async () => {
      throw new Error("not used");
    },
  };
  const name = "zipped";
  const sh = async (script: string) => {
    const r = await execInContainer(agent.docker, podNames(agent.config.namePrefix, name).container, [
      "sh",
      "-c",
      script,
    ]);
    return r.stdout;
  };

  beforeAll(async () => {
    agent = await startAgent();
    handlers = createHandlers({ ...agent, blobs });
    staged.set("site", await siteZip("Seeded"));
    const created = await handlers["pod.create"](
      { ...podSpec(name, { env: { SECRET: "kept" } }), seed: { blobKey: "site" } },
      agent.ctx,
    );
    expect(created.state).toBe("running");
  });

  afterAll(async () => {
    await agent?.cleanup();
  });

  it("creates a pod whose app is the archive, serving it from the first answer", async () => {
    const page = await httpGet(agent.port, `${name}.pods.test`);
    expect(page.body).toContain("<h1>Seeded</h1>");
    expect(await sh("cd ~/app && find . | sort")).toBe(
      ". ./.env ./css ./css/site.css ./index.html\n".replace(/ /g, "\n"),
    );
    expect(await sh("cat ~/app/.env")).toContain('SECRET="kept"');
    // put in before the first start (agent/zip/deploy.ts preloadStaged): pod_user's, the policy's modes
    expect(await sh("cd ~/app && stat -c '%U %a %n' . index.html css/site.css")).toBe(
      "pod_user 755 .\npod_user 644 index.html\npod_user 644 css/site.css\n",
    );
  });

  it("creates with the archive's own .env over the spec's, and fails a lying archive leaving nothing", async () => {
    staged.set(
      "own-env",
      await buildZip([
        { name: "index.html", data: "<h1>own</h1>" },
        { name: ".env", data: "MINE=1\n" },
      ]),
    );
    const own = "zipped-env";
    await handlers["pod.create"](
      { ...podSpec(own, { env: { SECRET: "spec" } }), seed: { blobKey: "own-env" } },
      agent.ctx,
    );
    const inOwn = await execInContainer(agent.docker, podNames(agent.config.namePrefix, own).container, [
      "cat",
      "/home/pod_user/app/.env",
    ]);
    expect(inOwn.stdout).toBe("MINE=1\n");
    expect((await httpGet(agent.port, `${own}.pods.test`)).body).toContain("<h1>own</h1>");

    staged.set(
      "lying",
      await buildZip([
        { name: "index.html", data: "<h1>lying</h1>" },
        { name: "zeros", data: new Uint8Array(1024 * 1024), declaredSize: 10 },
      ]),
    );
    const lying = "zipped-lying";
    await expect(
      handlers["pod.create"]({ ...podSpec(lying), seed: { blobKey: "lying" } }, agent.ctx),
    ).rejects.toMatchObject({ code: "bad_request", message: expect.stringMatching(/zeros.*inflates past/) });
    const n = podNames(agent.config.namePrefix, lying);
    const gone = (p: Promise<unknown>) =>
      p.then(
        () => false,
        () => true,
      );
    expect(await gone(agent.docker.getContainer(n.container).inspect())).toBe(true);
    expect(await gone(agent.docker.getVolume(n.volume).inspect())).toBe(true);
  });

  it("leaves the app untouched when an entry lies about its size", async () => {
    staged.set(
      "bomb",
      await buildZip([
        { name: "index.html", data: "<h1>bomb</h1>" },
        { name: "zeros", data: new Uint8Array(4 * 1024 * 1024), declaredSize: 10 },
      ]),
    );
    await expect(handlers["pod.zip.deploy"]({ name, blobKey: "bomb" }, agent.ctx)).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(/zeros.*inflates past/),
    });
    expect(await sh("cat ~/app/index.html")).toContain("Seeded");
    // The op failed as soon as the stream did; the pod's script removes its staging dir right after.
    expect(await until(async () => (await sh("ls -A ~/.pod | grep zip- || true")) === "", 10_000)).toBe(true);
  });

  it("replaces the app, keeping .env, and counts the files", async () => {
    staged.set(
      "v2",
      await buildZip([
        { name: "index.html", data: "<h1>v2</h1>" },
        { name: "a/b.txt", data: "b" },
      ]),
    );
    const result = await handlers["pod.zip.deploy"]({ name, blobKey: "v2" }, agent.ctx);
    expect(result).toEqual({ files: 2, bytes: 12 });
    expect(await sh("cd ~/app && find . | sort")).toBe(
      ". ./.env ./a ./a/b.txt ./index.html\n".replace(/ /g, "\n"),
    );
    expect(await sh("cat ~/app/.env")).toContain('SECRET="kept"');
    expect((await httpGet(agent.port, `${name}.pods.test`)).body).toContain("<h1>v2</h1>");
  });
});
