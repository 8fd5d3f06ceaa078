import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ZIP_UPLOAD_MAX_BYTES } from "../../shared/limits";
import { nameFromFile } from "../../worker/services/zip/from-zip";
import { buildZip, nodeZip, siteZip, type TestZipEntry } from "../support/zip";
import {
  FakeAgent,
  insertHost,
  insertPod,
  podEventRecords,
  podRecord,
  type TestHost,
  until,
} from "./support/agent";
import { call, freshIp, registerUser, sharedUser, type TestUser } from "./support/client";

/**
 * ZIP archives through the Worker, a FakeAgent playing the host: every refusal happens before
 * anything is created, started or staged; accepted archives reach the host only as a staged blob.
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser) => ({ token: user.token });
const INDEX = { name: "index.html", data: "<h1>hi</h1>" };

async function post(path: string, form: FormData, user?: TestUser) {
  const res = await exports.default.fetch(`http://localhost${path}`, {
    method: "POST",
    headers: { "cf-connecting-ip": freshIp(), ...(user ? { authorization: `Bearer ${user.token}` } : {}) },
    body: form,
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : undefined;
  if (res.status >= 400) {
    const extra = Object.keys(body ?? {}).filter((k) => k !== "error" && k !== "deps_output");
    expect(typeof body?.error, JSON.stringify(body)).toBe("string");
    expect(extra).toEqual([]);
  }
  return { status: res.status, body };
}

const form = (
  zip: Uint8Array | string | undefined,
  fields: Record<string, string> = {},
  filename = "site.zip",
) => {
  const f = new FormData();
  if (zip instanceof Uint8Array) f.set("zip", new File([zip], filename, { type: "application/zip" }));
  else if (zip !== undefined) f.set("zip", zip);
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  return f;
};

/** The staged blobs of a host (none may be left once a request is answered or refused). */
const stagedKeys = async (host: TestHost) =>
  [
    ...(await env.BLOBS.list({ prefix: `staging/${host.id}/` })).objects,
    ...(await env.BLOBS.list({ prefix: "staging/incoming/" })).objects,
  ].map((o) => o.key);

/** Bytes deflate cannot shrink (xorshift). */
function noise(n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = 2463534242;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Hostile and broken archives: each is refused with a 400 naming the problem. */
const REFUSED: [string, () => Promise<Uint8Array> | Uint8Array, RegExp][] = [
  ["zip-slip", () => buildZip([INDEX, { name: "../../etc/cron.d/evil", data: "x" }]), /zip-slip/],
  ["zip-slip inside a path", () => buildZip([INDEX, { name: "a/../../b", data: "x" }]), /zip-slip/],
  ["absolute path", () => buildZip([INDEX, { name: "/etc/passwd", data: "x" }]), /absolute path/],
  ["drive letter", () => buildZip([INDEX, { name: "C:/Windows/evil.dll", data: "x" }]), /absolute path/],
  ["backslashes", () => buildZip([INDEX, { name: "..\\..\\evil", data: "x" }]), /backslashes/],
  [
    "symlink",
    () => buildZip([INDEX, { name: "passwd", data: "/etc/passwd", unixMode: 0o120777 }]),
    /symbolic link/,
  ],
  ["device file", () => buildZip([INDEX, { name: "tty", unixMode: 0o020666 }]), /device/],
  ["encrypted entry", () => buildZip([INDEX, { name: "secret.txt", data: "x", flags: 1 }]), /encrypted/],
  [
    "bomb by ratio",
    () => buildZip([INDEX, { name: "zeros.bin", data: new Uint8Array(24 * 1024 * 1024) }]),
    /over 1000:1, a zip bomb/,
  ],
  [
    "bomb by declared size",
    // Two entries of 1 MB that do not compress, each declaring 600 MB: under 1000:1 each, 1.2 GB together.
    () =>
      buildZip([
        INDEX,
        { name: "a.bin", data: noise(1_000_000), declaredSize: 600_000_000 },
        { name: "b.bin", data: noise(1_000_000), declaredSize: 600_000_000 },
      ]),
    /more than 1024 MiB/,
  ],
  ["duplicate names", () => buildZip([INDEX, INDEX]), /appears twice/],
  [
    "a file used as a folder",
    () => buildZip([INDEX, { name: "a", data: "x" }, { name: "a/b", data: "y" }]),
    /"a" is a file, but "a\/b" is inside it/,
  ],
  ["not a ZIP", () => new TextEncoder().encode("just some text, not an archive at all"), /not a ZIP/],
  [
    "truncated ZIP",
    async () => {
      const zip = await siteZip();
      return zip.subarray(0, zip.length - 30);
    },
    /not a ZIP|corrupt/,
  ],
  [
    "corrupt central directory",
    async () => {
      const zip = await siteZip();
      const bad = new Uint8Array(zip);
      new DataView(bad.buffer).setUint32(bad.length - 6, 5, true); // directory offset → inside a file
      return bad;
    },
    /corrupt/,
  ],
  [
    "no top-level package.json or index.html",
    () => buildZip([{ name: "README.md", data: "x" }]),
    /package\.json or index\.html; it holds README\.md/,
  ],
  [
    "a wrapping folder",
    () => buildZip([{ name: "site/" }, { name: "site/index.html", data: "x" }]),
    /holds only the folder "site\/"; zip that folder's contents/,
  ],
  ["an empty archive", () => buildZip([]), /empty/],
];

describe("POST /api/pods/from-zip", () => {
  it("creates a static pod: 202 creating, the archive staged for pod.create's seed, reloaded on the host before running", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const zip = await siteZip();
    const res = await post("/api/pods/from-zip", form(zip, { name: "zipsite", server_id: host.id }), user);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({
      name: "zipsite",
      preset: "static",
      status: "creating",
      plan_slug: "launch",
    });

    const create = await agent.next("control:call");
    expect(create.op).toBe("pod.create");
    const seed = (create.params as { seed?: { blobKey: string } }).seed;
    expect(seed?.blobKey).toMatch(new RegExp(`^staging/${host.id}/`));
    const staged = await env.BLOBS.get(seed?.blobKey ?? "");
    expect(new Uint8Array((await staged?.arrayBuffer()) ?? new ArrayBuffer(0))).toEqual(zip);
    // The host unpacks and reloads within pod.create: no separate pod.reload follows.
    agent.ok(create, {
      name: "zipsite",
      state: "running",
      ip: "10.0.0.9",
      reload: { ok: true, services: ["web"], depsInstalled: null, unsupported: [] },
    });

    const pod = await call("GET", "/api/pods?limit=5", undefined, as(user));
    const id = pod.body.pods[0].id;
    const events = await (async () => {
      for (let i = 0; i < 100; i++) {
        const list = await podEventRecords(id);
        if (list.some((e) => e.type === "reloaded")) return list;
        await new Promise((r) => setTimeout(r, 20));
      }
      return podEventRecords(id);
    })();
    expect(events.map((e) => e.type)).toEqual(["created", "progress", "started", "zip_uploaded", "reloaded"]);
    expect(events[1]?.message).toMatch(/^unpacking site\.zip on server /);
    expect(JSON.parse(events[3]?.metadata ?? "{}")).toEqual({ files: 2, bytes: 91, archive: "site.zip" });
    expect(await stagedKeys(host)).toEqual([]);
  });

  it("a failed install on the host leaves the pod running, with an error event naming the exit status", {
    timeout: 30_000,
  }, async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const res = await post("/api/pods/from-zip", form(await nodeZip(), { server_id: host.id }), user);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const create = await agent.next("control:call");
    agent.ok(create, {
      name: res.body.name,
      state: "running",
      ip: "10.0.0.9",
      reload: { ok: false, depsOutput: "npm ERR! 404", exitCode: 1 },
    });
    const events = await until(
      async () => {
        const list = await podEventRecords(res.body.id);
        return list.some((e) => e.type === "error") ? list : undefined;
      },
      "the error event",
      15_000,
    );
    expect(events.map((e) => e.type)).toEqual(["created", "progress", "started", "zip_uploaded", "error"]);
    expect(events[4]?.message).toMatch(/install or build failed \(exit status 1\); see the build log/);
    expect((await podRecord(res.body.id))?.status).toBe("running");
  });

  it("detects the preset from the top level (contract), and names the pod after the file when no name is given", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const cases: [TestZipEntry[], string][] = [
      [[{ name: "package.json", data: "{}" }], "nodejs"],
      [[INDEX, { name: "requirements.txt", data: "" }], "python"],
      [[INDEX, { name: "composer.json", data: "{}" }], "php"],
      [[INDEX, { name: "index.php", data: "<?php echo 1;" }], "php"],
      [[INDEX, { name: "package.json", data: "{}" }, { name: "requirements.txt", data: "" }], "nodejs"],
      [[INDEX], "static"],
    ];
    for (const [entries, preset] of cases) {
      const res = await post(
        "/api/pods/from-zip",
        form(await buildZip(entries), { server_id: host.id }, "My Cool Site.zip"),
        user,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body.preset, entries.map((e) => e.name).join()).toBe(preset);
      expect(res.body.name).toMatch(/^my-cool-site-[a-z0-9]{6}$/);
      agent.fail(await agent.next("control:call"), "internal", "not today");
    }
  });

  it("takes an explicit preset the archive fits, and refuses one it contradicts", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    // A plain site fits php (nginx serves it); a node app with a server file fits nodejs without package.json.
    const php = await post(
      "/api/pods/from-zip",
      form(await siteZip(), { preset: "php", server_id: host.id }),
      user,
    );
    expect(php.body.preset).toBe("php");
    agent.fail(await agent.next("control:call"), "internal");
    const node = await post(
      "/api/pods/from-zip",
      form(await buildZip([INDEX, { name: "server.js", data: "" }]), {
        preset: "nodejs",
        server_id: host.id,
      }),
      user,
    );
    expect(node.status).toBe(202);
    agent.fail(await agent.next("control:call"), "internal");

    for (const [zip, preset, why] of [
      [await nodeZip(), "php", /nodejs app \(it has package\.json\), not php/],
      [await siteZip(), "python", /static site \(no requirements\.txt, app\.py, main\.py, server\.py/],
    ] as const) {
      const res = await post("/api/pods/from-zip", form(zip, { preset, server_id: host.id }), user);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^preset: /);
      expect(res.body.error).toMatch(why);
    }
    await agent.expectNone("control:call");
  });

  it.each(REFUSED)("refuses %s with 400 before anything is created", async (_what, build, why) => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const before = (await call("GET", "/api/pods", undefined, as(user))).body.total;
    const res = await post("/api/pods/from-zip", form(await build(), { server_id: host.id }), user);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatch(/^zip: /);
    expect(res.body.error).toMatch(why);
    await agent.expectNone("control:call", 50);
    expect((await call("GET", "/api/pods", undefined, as(user))).body.total).toBe(before);
    expect(await stagedKeys(host)).toEqual([]);
  });

  it("needs the zip part as a file, and bad form fields are 400 naming them", async () => {
    const user = await sharedUser();
    const missing = await post("/api/pods/from-zip", form(undefined, { name: "nozip" }), user);
    expect(missing).toEqual({ status: 400, body: { error: "zip: is required (a file part of the form)" } });
    const text = await post("/api/pods/from-zip", form("PK not a file"), user);
    expect(text).toMatchObject({ status: 400, body: { error: /^zip: must be a file part of the form/ } });
    const zip = await siteZip();
    for (const [field, value] of [
      ["name", "Not A Name"],
      ["preset", "cobol"],
      ["plan_slug", "gigantic"],
      ["region", "atlantis"],
    ] as const) {
      const res = await post("/api/pods/from-zip", form(zip, { [field]: value }), user);
      expect(res.status, field).toBe(400);
      expect(res.body.error, field).toMatch(new RegExp(`^${field}: `));
    }
    const json = await call("POST", "/api/pods/from-zip", { zip: "x" }, as(user));
    expect(json.status).toBe(415);
  });

  it("needs a credential", async () => {
    const res = await post("/api/pods/from-zip", form(await siteZip()));
    expect(res.status).toBe(401);
  });

  it("answers 413 for an archive over 128 MiB", async () => {
    // The body limit refuses it by its length, before the form is read (without a length, the
    // archive's own count stops it while it streams: see staged-blobs.test.ts, putStream).
    const user = await sharedUser();
    const boundary = "zipzipzip";
    const head = new TextEncoder().encode(
      `--${boundary}\r\ncontent-disposition: form-data; name="zip"; filename="big.zip"\r\n\r\n`,
    );
    const body = new Uint8Array(head.length + ZIP_UPLOAD_MAX_BYTES + 128 * 1024); // a Blob cannot be this big
    body.set(head);
    const res = await exports.default.fetch("http://localhost/api/pods/from-zip", {
      method: "POST",
      headers: {
        authorization: `Bearer ${user.token}`,
        "cf-connecting-ip": freshIp(),
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
      body,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/too large/) });
  });
});

describe("nameFromFile", () => {
  it("makes a valid pod name from any file name", () => {
    for (const [file, base] of [
      ["My Site.zip", "my-site"],
      ["2024 backup.ZIP", "backup"],
      ["日本.zip", "site"],
      ["x.zip", "site"],
      [`${"a".repeat(80)}.zip`, "a".repeat(33)],
    ] as const) {
      const name = nameFromFile(file);
      expect(name, file).toMatch(/^[a-z][a-z0-9-]{1,38}[a-z0-9]$/);
      expect(name.slice(0, -7), file).toBe(base);
    }
  });
});

describe("POST /api/pods/{name}/zip", () => {
  async function podOf(user: TestUser, host: TestHost, preset: string, status = "running") {
    const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
    await env.DB.prepare("UPDATE pods SET preset = ? WHERE id = ?").bind(preset, pod.id).run();
    const state = status === "running" ? "running" : "stopped";
    const { agent } = await FakeAgent.online(host, [
      { name: pod.name, state, ip: state === "running" ? "10.0.0.2" : null },
    ]);
    return { pod, agent };
  }

  it("replaces the app: the archive staged for pod.zip.deploy, then a reload; 200 with the file count", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "nodejs");
    const zip = await nodeZip();
    const reply = post(`/api/pods/${pod.name}/zip`, form(zip, {}, "app.zip"), user);
    const deploy = await agent.next("control:call");
    expect(deploy).toMatchObject({ op: "pod.zip.deploy", params: { name: pod.name } });
    const key = (deploy.params as { blobKey: string }).blobKey;
    expect(new Uint8Array(await ((await env.BLOBS.get(key))?.arrayBuffer() ?? new ArrayBuffer(0)))).toEqual(
      zip,
    );
    agent.ok(deploy, { files: 2, bytes: 321 });
    const reload = await agent.next("control:call");
    expect(reload).toMatchObject({ op: "pod.reload", params: { name: pod.name, preset: "nodejs" } });
    agent.ok(reload, { ok: true, services: ["app"], depsInstalled: "npm", unsupported: [] });
    expect(await reply).toEqual({ status: 200, body: { status: "uploaded", files: 2 } });
    expect(await env.BLOBS.head(key)).toBeNull();
    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toEqual(["zip_uploaded", "reloaded"]);
    expect(JSON.parse(events[0]?.metadata ?? "{}")).toEqual({ files: 2, bytes: 321, archive: "app.zip" });
  });

  it("starts a stopped pod first", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "static", "stopped");
    const reply = post(`/api/pods/${pod.name}/zip`, form(await siteZip()), user);
    const start = await agent.next("control:call");
    expect(start).toMatchObject({ op: "pod.start", params: { name: pod.name } });
    agent.ok(start, { name: pod.name, state: "running", ip: "10.0.0.3" });
    const deploy = await agent.next("control:call");
    expect(deploy.op).toBe("pod.zip.deploy");
    agent.ok(deploy, { files: 2, bytes: 80 });
    agent.ok(await agent.next("control:call"), {
      ok: true,
      services: ["web"],
      depsInstalled: null,
      unsupported: [],
    });
    expect(await reply).toEqual({ status: 200, body: { status: "uploaded", files: 2 } });
  });

  it("refuses an archive of another runtime with 400 naming both, touching nothing", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    for (const [preset, zip, why] of [
      [
        "static",
        await nodeZip(),
        /the archive is a nodejs app \(it has package\.json\), not static \(pod .* runs static\)/,
      ],
      ["nodejs", await buildZip([INDEX, { name: "requirements.txt", data: "" }]), /python app .* not nodejs/],
      ["python", await siteZip(), /static site .* not a python app/],
    ] as const) {
      const { pod, agent } = await podOf(user, host, preset, "stopped");
      const res = await post(`/api/pods/${pod.name}/zip`, form(zip), user);
      expect(res.status, preset).toBe(400);
      expect(res.body.error).toMatch(why);
      await agent.expectNone("control:call", 50);
      agent.close();
    }
    expect(await stagedKeys(host)).toEqual([]);
  });

  it("takes a plain site into a php pod", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "php");
    const reply = post(`/api/pods/${pod.name}/zip`, form(await siteZip()), user);
    const deploy = await agent.next("control:call");
    expect(deploy.op).toBe("pod.zip.deploy");
    agent.fail(deploy, "unavailable", "host busy");
    expect((await reply).status).toBe(503);
    expect(await stagedKeys(host)).toEqual([]);
  });

  it.each(
    REFUSED.filter(([what]) =>
      ["zip-slip", "symlink", "bomb by ratio", "corrupt central directory"].includes(what),
    ),
  )("refuses %s with 400 and does not even start a stopped pod", async (_what, build, why) => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "static", "stopped");
    const res = await post(`/api/pods/${pod.name}/zip`, form(await build()), user);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(why);
    await agent.expectNone("control:call", 50);
    expect(await podEventRecords(pod.id)).toEqual([]);
  });

  it("passes the host's own refusal on (a bomb with lying headers shows only while inflating)", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "static");
    const reply = post(`/api/pods/${pod.name}/zip`, form(await siteZip()), user);
    const deploy = await agent.next("control:call");
    agent.fail(
      deploy,
      "bad_request",
      'zip: entry "x" inflates past the 10 bytes its header declares (a zip bomb)',
    );
    expect(await reply).toEqual({ status: 400, body: { error: expect.stringMatching(/inflates past/) } });
    await agent.expectNone("control:call", 50);
    expect(await stagedKeys(host)).toEqual([]);
  });

  it("answers the reload's 500 with deps_output when the install fails after the swap", async () => {
    const [user, host] = await Promise.all([sharedUser(), insertHost()]);
    const { pod, agent } = await podOf(user, host, "nodejs");
    const reply = post(`/api/pods/${pod.name}/zip`, form(await nodeZip()), user);
    agent.ok(await agent.next("control:call"), { files: 2, bytes: 200 });
    agent.ok(await agent.next("control:call"), { ok: false, depsOutput: "npm ERR! 404", exitCode: 1 });
    const res = await reply;
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      error: expect.stringMatching(
        /^the archive was unpacked \(2 files\), but dependency install or build failed/,
      ),
      deps_output: "npm ERR! 404",
    });
  });

  it("is 404 for another team's pod and an unknown one, 401 without a credential", async () => {
    const [alice, eve, host] = await Promise.all([registerUser(), registerUser(), insertHost()]);
    const { pod, agent } = await podOf(alice, host, "static");
    const zip = await siteZip();
    for (const name of [pod.name, "no-such-pod"]) {
      expect((await post(`/api/pods/${name}/zip`, form(zip), eve)).status, name).toBe(404);
    }
    expect((await post(`/api/pods/${pod.name}/zip`, form(zip))).status).toBe(401);
    const missing = await post(`/api/pods/${pod.name}/zip`, form(undefined), alice);
    expect(missing).toEqual({ status: 400, body: { error: "zip: is required (a file part of the form)" } });
    await agent.expectNone("control:call", 50);
  });
});
