import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { FILE_UPLOAD_MAX_BYTES } from "../../shared/limits";
import { FakeAgent, insertHost, insertPod, type TestHost } from "./support/agent";
import { call, freshIp, registerUser, sharedUser, type TestUser } from "./support/client";

/**
 * The Files endpoints through the Worker, with a FakeAgent playing the host: what the Worker
 * refuses before asking the host (paths, sizes, names), what it sends, how it shapes the answers,
 * and the relays that stream the bytes both ways.
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser) => ({ token: user.token });

async function setup(status = "running") {
  const [user, host] = await Promise.all([sharedUser(), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
  return { user, host, pod };
}

/** the host's agent, reporting the pod's container as running (an empty inventory would mark it error) */
const online = (host: TestHost, pod: string) =>
  FakeAgent.online(host, [{ name: pod, state: "running", ip: "10.0.0.2" }]);

const bytes = (n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 131 + 17) & 0xff;
  return out;
};

/** the agent's side of a relay */
const relayOf = (host: TestHost, id: string, init: RequestInit = {}) =>
  exports.default.fetch(`http://localhost/agent/relay/${id}`, {
    ...init,
    headers: { authorization: `Bearer ${host.token}`, ...(init.headers ?? {}) },
  });

/** the agent sending `data` for the relay `id`: answered once the caller took it all */
const sendTo = (host: TestHost, id: string, data: Uint8Array) =>
  relayOf(host, id, { method: "PUT", headers: { "content-length": String(data.length) }, body: data });

const relayIdOf = (sent: { params: unknown }) => (sent.params as { relay: string }).relay;

/** nothing of a transfer was stored on the way */
const nothingStaged = async (host: TestHost) =>
  (await env.BLOBS.list({ prefix: `staging/${host.id}/` })).objects.length === 0;

async function upload(user: TestUser, pod: string, form: FormData) {
  const res = await exports.default.fetch(`http://localhost/api/pods/${pod}/files/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.token}`, "cf-connecting-ip": freshIp() },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const BAD_PATHS: [string, RegExp][] = [
  ["/home/pod_user/../../etc/passwd", /\.\./],
  ["/home/pod_user/app/%2e%2e/%2e%2e/etc", /\.\./],
  ["app/index.html", /absolute/],
  ["/etc/passwd", /inside/],
  ["/home/pod_userX/secret", /inside/],
  ["/var/wwwroot", /inside/],
  ["/tmp/a%00b", /control/],
];

describe("path checks (before the host is asked)", () => {
  it("refuses traversal, relative and outside paths on every route with 400 naming the field", async () => {
    // No agent is connected: a request that got past the checks would be 503, not 400.
    const { user, pod } = await setup();
    for (const [path, why] of BAD_PATHS) {
      const q = `path=${path.replaceAll("/", "%2F")}`;
      const raw = decodeURIComponent(path);
      const attempts = [
        call("GET", `/api/pods/${pod.name}/files?${q}`, undefined, as(user)),
        call("GET", `/api/pods/${pod.name}/files/content?${q}`, undefined, as(user)),
        call("GET", `/api/pods/${pod.name}/files/download?${q}`, undefined, as(user)),
        call("DELETE", `/api/pods/${pod.name}/files?${q}`, undefined, as(user)),
        call("PUT", `/api/pods/${pod.name}/files/content`, { path: raw, content: "x" }, as(user)),
        call("POST", `/api/pods/${pod.name}/files/rename`, { old_path: "/tmp/a", new_path: raw }, as(user)),
        call("POST", `/api/pods/${pod.name}/files/copy`, { source_path: raw, dest_path: "/tmp/b" }, as(user)),
        call("POST", `/api/pods/${pod.name}/folders`, { path: raw }, as(user)),
      ];
      for (const res of await Promise.all(attempts)) {
        expect(res.status, path).toBe(400);
        expect(res.body.error, path).toMatch(/^(path|new_path|source_path): /);
        expect(res.body.error, path).toMatch(why);
      }
    }
  });

  it("refuses a required path that is missing", async () => {
    const { user, pod } = await setup();
    for (const [method, route] of [
      ["GET", "files/content"],
      ["GET", "files/download"],
      ["DELETE", "files"],
    ] as const) {
      const res = await call(method, `/api/pods/${pod.name}/${route}`, undefined, as(user));
      expect(res.status, route).toBe(400);
      expect(res.body.error).toBe("path: is required");
    }
  });

  it("needs a running pod, and hides other teams' pods", async () => {
    const { user, pod } = await setup("stopped");
    const stopped = await call("GET", `/api/pods/${pod.name}/files`, undefined, as(user));
    expect(stopped).toMatchObject({ status: 400, body: { error: expect.stringContaining("not running") } });
    const eve = await registerUser("Eve");
    const other = await call("GET", `/api/pods/${pod.name}/files`, undefined, as(eve));
    expect(other.status).toBe(404);
    const anonymous = await call("GET", `/api/pods/${pod.name}/files`);
    expect(anonymous.status).toBe(401);
  });
});

describe("GET /api/pods/{name}/files", () => {
  it("lists the app root by default, in the spec's File entry shape", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const reply = call("GET", `/api/pods/${pod.name}/files`, undefined, as(user));
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({
      op: "pod.files.list",
      params: { name: pod.name, path: "/home/pod_user/app" },
    });
    agent.ok(sent, {
      found: true,
      entries: [
        { name: "public", permissions: "drwxr-xr-x", size: 4096, isDir: true },
        { name: "index.html", permissions: "-rw-r--r--", size: 239, isDir: false },
      ],
    });
    expect(await reply).toMatchObject({
      status: 200,
      body: {
        path: "/home/pod_user/app",
        files: [
          { name: "public", permissions: "drwxr-xr-x", size: "4096", is_dir: true },
          { name: "index.html", permissions: "-rw-r--r--", size: "239", is_dir: false },
        ],
      },
    });
  });

  it("answers an empty list for a missing directory, and passes the host's refusals on", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const missing = call("GET", `/api/pods/${pod.name}/files?path=/tmp//new/./dir`, undefined, as(user));
    const sent = await agent.next("control:call");
    expect(sent.params).toMatchObject({ path: "/tmp/new/dir" });
    agent.ok(sent, { found: false, entries: [] });
    expect(await missing).toMatchObject({ status: 200, body: { path: "/tmp/new/dir", files: [] } });

    const denied = call("GET", `/api/pods/${pod.name}/files?path=/var/www/secret`, undefined, as(user));
    agent.fail(await agent.next("control:call"), "forbidden", "listing /var/www/secret: permission denied");
    expect(await denied).toMatchObject({
      status: 403,
      body: { error: expect.stringContaining("permission") },
    });
  });
});

describe("missing files", () => {
  it("are 404 {error} for read, download, delete, rename and copy", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const p = "/home/pod_user/app/nope";
    const cases: [() => ReturnType<typeof call>, unknown][] = [
      [
        () => call("GET", `/api/pods/${pod.name}/files/content?path=${p}`, undefined, as(user)),
        { size: 0, sent: false },
      ],
      [
        () => call("GET", `/api/pods/${pod.name}/files/download?path=${p}`, undefined, as(user)),
        { size: 0, sent: false },
      ],
      [() => call("DELETE", `/api/pods/${pod.name}/files?path=${p}`, undefined, as(user)), {}],
      [
        () =>
          call("POST", `/api/pods/${pod.name}/files/rename`, { old_path: p, new_path: `${p}2` }, as(user)),
        {},
      ],
      [
        () =>
          call("POST", `/api/pods/${pod.name}/files/copy`, { source_path: p, dest_path: `${p}2` }, as(user)),
        {},
      ],
    ];
    for (const [request, extra] of cases) {
      const reply = request();
      const sent = await agent.next("control:call");
      agent.ok(sent, { found: false, ...(extra as object) });
      const res = await reply;
      expect(res.status, sent.op).toBe(404);
      expect(res.body).toEqual({ error: `${p}: no such file or directory` });
    }
  });
});

describe("file bytes stream through a relay", () => {
  /** the host's side of a receive: the relay's bytes, answered with a temp file in `dir` */
  const receive = async (host: TestHost, agent: FakeAgent, dir: string) => {
    const sent = await agent.next("control:call", 10_000);
    expect(sent).toMatchObject({ op: "pod.files.receive", params: { dir } });
    expect(relayIdOf(sent)).toMatch(new RegExp(`^${host.id}/[0-9a-f-]{36}$`));
    const fetched = await relayOf(host, relayIdOf(sent));
    return { sent, fetched, temp: `${dir}/.upload-a1b2c3` };
  };

  it("upload: the file streams to the host before the form is read, then is committed; nothing is stored", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const data = bytes(200_001);
    const form = new FormData();
    form.set("path", "/home/pod_user/app/img");
    form.set("file", new File([data], "logo.png"));
    const reply = upload(user, pod.name, form);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/app/img");
    expect(fetched.headers.get("content-length")).toBeNull(); // the part's size is not known up front
    expect(new Uint8Array(await fetched.arrayBuffer())).toEqual(data);
    agent.ok(sent, { temp, size: data.length });
    const commit = await agent.next("control:call", 10_000);
    expect(commit).toMatchObject({
      op: "pod.files.commit",
      params: { name: pod.name, temp, path: "/home/pod_user/app/img/logo.png", size: data.length },
    });
    agent.ok(commit, { path: "/home/pod_user/app/img/logo.png" });
    expect(await reply).toEqual({
      status: 200,
      body: { status: "uploaded", path: "/home/pod_user/app/img/logo.png" },
    });
    expect(await nothingStaged(host)).toBe(true);
  });

  it("upload: a body without a length streams too; the host gets the first bytes before the last are sent", {
    timeout: 30_000,
  }, async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const boundary = "streamedbody";
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="s.bin"\r\n\r\n`;
    const encoder = new TextEncoder();
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    const writer = pipe.writable.getWriter();
    const reply = exports.default.fetch(`http://localhost/api/pods/${pod.name}/files/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${user.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
      body: pipe.readable,
    });
    const first = bytes(1024 * 1024 + 1); // a full read of the request body, and a byte more
    void writer.write(encoder.encode(head));
    void writer.write(first);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/.pod/uploads");
    const reader = (fetched.body as ReadableStream<Uint8Array>).getReader();
    let got = 0;
    while (got < 64 * 1024) got += (await reader.read()).value?.byteLength ?? 0; // the body is still open
    // the rest is sent while the host reads (each side waits for the other: backpressure)
    const rest = (async () => {
      await writer.write(encoder.encode("tail"));
      await writer.write(encoder.encode(`\r\n--${boundary}--\r\n`));
      await writer.close();
    })();
    for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value.byteLength;
    await rest;
    expect(got).toBe(first.length + 4);
    agent.ok(sent, { temp, size: got });
    const commit = await agent.next("control:call", 10_000);
    expect(commit).toMatchObject({
      op: "pod.files.commit",
      params: { path: "/home/pod_user/app/s.bin", size: got },
    });
    agent.ok(commit, { path: "/home/pod_user/app/s.bin" });
    expect((await reply).status).toBe(200);
  });

  it("upload: a file before its path waits in the pod's staging directory, then moves in place", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const form = new FormData();
    form.set("file", new File(["late path"], "notes.txt"));
    form.set("path", "/tmp/later");
    const reply = upload(user, pod.name, form);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/.pod/uploads");
    expect(await fetched.text()).toBe("late path");
    agent.ok(sent, { temp, size: 9 });
    const commit = await agent.next("control:call", 10_000);
    expect(commit).toMatchObject({ op: "pod.files.commit", params: { temp, path: "/tmp/later/notes.txt" } });
    agent.ok(commit, { path: "/tmp/later/notes.txt" });
    expect(await reply).toMatchObject({ status: 200, body: { path: "/tmp/later/notes.txt" } });
  });

  it("upload: a bad path after the file is 400 and the received file is discarded", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const form = new FormData();
    form.set("file", new File(["x"], "x.txt"));
    form.set("path", "/etc");
    const reply = upload(user, pod.name, form);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/.pod/uploads");
    await fetched.arrayBuffer();
    agent.ok(sent, { temp, size: 1 });
    const discard = await agent.next("control:call", 10_000);
    expect(discard).toMatchObject({ op: "pod.files.discard", params: { name: pod.name, temp } });
    agent.ok(discard, {});
    expect(await reply).toMatchObject({ status: 400, body: { error: /^path: .*inside/ } });
  });

  it("upload: the host's refusal is the answer, and the relay is called off", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const form = new FormData();
    form.set("path", "/home/pod_user/app/file");
    form.set("file", new File([bytes(1000)], "x.bin"));
    const reply = upload(user, pod.name, form);
    const sent = await agent.next("control:call", 10_000);
    agent.fail(sent, "bad_request", "path: /home/pod_user/app/file exists and is not a directory");
    expect(await reply).toEqual({
      status: 400,
      body: { error: "path: /home/pod_user/app/file exists and is not a directory" },
    });
    const late = await relayOf(host, relayIdOf(sent));
    expect(late.status).toBe(503);
  });

  it("upload: a refused commit is the answer, and the received file is discarded", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const form = new FormData();
    form.set("path", "/home/pod_user/app");
    form.set("file", new File(["x"], "dir"));
    const reply = upload(user, pod.name, form);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/app");
    await fetched.arrayBuffer();
    agent.ok(sent, { temp, size: 1 });
    const commit = await agent.next("control:call", 10_000);
    agent.fail(commit, "bad_request", "path: /home/pod_user/app/dir is a directory");
    const discard = await agent.next("control:call", 10_000);
    expect(discard).toMatchObject({ op: "pod.files.discard", params: { temp } });
    agent.ok(discard, {});
    expect(await reply).toEqual({
      status: 400,
      body: { error: "path: /home/pod_user/app/dir is a directory" },
    });
  });

  it("upload: a size the host did not get is never committed", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const form = new FormData();
    form.set("file", new File(["twelve bytes"], "t.txt"));
    const reply = upload(user, pod.name, form);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/.pod/uploads");
    await fetched.arrayBuffer();
    agent.ok(sent, { temp, size: 11 });
    const discard = await agent.next("control:call", 10_000);
    expect(discard).toMatchObject({ op: "pod.files.discard", params: { temp } });
    agent.ok(discard, {});
    expect((await reply).status).toBe(503);
  });

  it("upload: 413 past 32 MiB, cut off while it streams, and what the host got is discarded", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const big = new FormData();
    big.set("file", new File([new Uint8Array(FILE_UPLOAD_MAX_BYTES + 1)], "big.bin"));
    const reply = upload(user, pod.name, big);
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/.pod/uploads");
    // drained, not kept (the test's isolate holds the form already); it breaks off or ends short
    let got = 0;
    const reader = (fetched.body as ReadableStream<Uint8Array>).getReader();
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value.byteLength;
    } catch {
      // broken off: the agent fails its receive, or answers what it has
    }
    expect(got).toBeLessThanOrEqual(FILE_UPLOAD_MAX_BYTES);
    agent.ok(sent, { temp, size: got });
    const discard = await agent.next("control:call", 10_000);
    expect(discard).toMatchObject({ op: "pod.files.discard", params: { temp } });
    agent.ok(discard, {});
    const tooBig = await reply;
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error).toMatch(/file: .*32 MiB/);
  });

  it("upload: 400 without a file, with a text field as file, a bad file name, or a broken form", async () => {
    const { user, pod } = await setup();
    const none = new FormData();
    none.set("path", "/tmp");
    expect(await upload(user, pod.name, none)).toMatchObject({ status: 400, body: { error: /^file: / } });
    const text = new FormData();
    text.set("file", "not a file part");
    expect(await upload(user, pod.name, text)).toMatchObject({ status: 400, body: { error: /^file: / } });

    for (const name of ["..", "a/b", "x\u0001y"]) {
      const form = new FormData();
      form.set("file", new File(["x"], name));
      const res = await upload(user, pod.name, form);
      expect(res.status, name).toBe(400);
      expect(res.body.error).toMatch(/^file: /);
    }
    const outside = new FormData();
    outside.set("path", "/etc");
    outside.set("file", new File(["x"], "passwd"));
    expect(await upload(user, pod.name, outside)).toMatchObject({ status: 400, body: { error: /^path: / } });
    const raw = (body: string, type: string) =>
      exports.default.fetch(`http://localhost/api/pods/${pod.name}/files/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${user.token}`, "content-type": type },
        body,
      });
    const json = await raw("{}", "application/json");
    expect(json.status).toBe(415);
    expect(((await json.json()) as { error: string }).error).toMatch(/multipart\/form-data/);
    const truncated = await raw(
      '--b\r\ncontent-disposition: form-data; name="path"\r\n\r\n/tmp',
      "multipart/form-data; boundary=b",
    );
    expect(truncated.status).toBe(400);
  });

  it("download: the host streams the file, the caller gets its raw bytes as an attachment", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const data = bytes(123_457);
    const reply = exports.default.fetch(
      `http://localhost/api/pods/${pod.name}/files/download?path=/tmp/r%C3%A9sum%C3%A9%20"1".pdf`,
      { headers: { authorization: `Bearer ${user.token}`, "cf-connecting-ip": freshIp() } },
    );
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.files.download", params: { path: '/tmp/résumé "1".pdf' } });
    const put = sendTo(host, relayIdOf(sent), data);
    const res = await reply;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-length")).toBe(String(data.length));
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="r_sum_ _1_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%221%22.pdf`,
    );
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(data);
    expect((await put).status).toBe(201);
    agent.ok(sent, { found: true, size: data.length, sent: true });
    expect(await nothingStaged(host)).toBe(true);
  });

  it("download: a refusal before any byte keeps its status; a caller going away fails the agent's PUT", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const get = () =>
      exports.default.fetch(`http://localhost/api/pods/${pod.name}/files/download?path=/var/www/secret`, {
        headers: { authorization: `Bearer ${user.token}`, "cf-connecting-ip": freshIp() },
      });
    const denied = get();
    agent.fail(await agent.next("control:call"), "forbidden", "reading /var/www/secret: permission denied");
    const refused = await denied;
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: "reading /var/www/secret: permission denied" });

    const tooBig = get();
    agent.ok(await agent.next("control:call"), { found: true, size: 600 * 1024 * 1024, sent: false });
    expect((await tooBig).status).toBe(413);

    const reply = get();
    const sent = await agent.next("control:call");
    const put = sendTo(host, relayIdOf(sent), bytes(4 * 1024 * 1024));
    const res = await reply;
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    await reader?.read();
    await reader?.cancel();
    const broken = await put;
    expect(broken.status).toBe(503);
    expect(((await broken.json()) as { error: string }).error).toMatch(/broke off/);
    agent.fail(sent, "unavailable", "the transfer broke off");
  });

  it("content: UTF-8 text comes back as a string; other bytes and big files are 400", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const read = async (file: Uint8Array | null, size = file?.length ?? 0) => {
      const reply = call("GET", `/api/pods/${pod.name}/files/content?path=/tmp/f`, undefined, as(user));
      const sent = await agent.next("control:call");
      if (file) expect((await sendTo(host, relayIdOf(sent), file)).status).toBe(201);
      agent.ok(sent, { found: true, size, sent: file !== null });
      return reply;
    };
    const text = "\uFEFFhéllo\n\u0000wörld 🌍";
    expect(await read(new TextEncoder().encode(text))).toMatchObject({
      status: 200,
      body: { path: "/tmp/f", content: text },
    });
    const binary = await read(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]));
    expect(binary).toMatchObject({ status: 400, body: { error: expect.stringContaining("not UTF-8") } });
    expect(binary.body.error).toContain("/files/download");
    const big = await read(null, 6 * 1024 * 1024);
    expect(big).toMatchObject({ status: 400, body: { error: expect.stringContaining("5 MiB") } });
  });

  it("write: the content streams through receive and commit", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const content = "<h1>héllo</h1>\n";
    const reply = call(
      "PUT",
      `/api/pods/${pod.name}/files/content`,
      { path: "/home/pod_user/app/new/dir/index.html", content },
      as(user),
    );
    const size = new TextEncoder().encode(content).length;
    const { sent, fetched, temp } = await receive(host, agent, "/home/pod_user/app/new/dir");
    expect(fetched.headers.get("content-length")).toBe(String(size));
    expect(await fetched.text()).toBe(content);
    agent.ok(sent, { temp, size });
    const commit = await agent.next("control:call");
    expect(commit).toMatchObject({
      op: "pod.files.commit",
      params: { temp, path: "/home/pod_user/app/new/dir/index.html", size },
    });
    agent.ok(commit, { path: "/home/pod_user/app/new/dir/index.html" });
    expect(await reply).toMatchObject({
      status: 200,
      body: { status: "saved", path: "/home/pod_user/app/new/dir/index.html" },
    });
  });
});

describe("rename, copy, folders, delete", () => {
  it("send normalised paths and answer in the spec's shapes", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const steps: [() => ReturnType<typeof call>, string, unknown, unknown][] = [
      [
        () =>
          call(
            "POST",
            `/api/pods/${pod.name}/files/rename`,
            { old_path: "/tmp/a", new_path: "/tmp/./b" },
            as(user),
          ),
        "pod.files.rename",
        { found: true },
        { status: "renamed", old_path: "/tmp/a", new_path: "/tmp/b" },
      ],
      [
        () =>
          call(
            "POST",
            `/api/pods/${pod.name}/files/copy`,
            { source_path: "/tmp/b", dest_path: "/tmp/c" },
            as(user),
          ),
        "pod.files.copy",
        { found: true },
        { status: "copied", source_path: "/tmp/b", dest_path: "/tmp/c" },
      ],
      [
        () => call("POST", `/api/pods/${pod.name}/folders`, { path: "/tmp/x/y/z" }, as(user)),
        "pod.files.mkdir",
        { path: "/tmp/x/y/z" },
        { status: "created", path: "/tmp/x/y/z" },
      ],
      [
        () => call("DELETE", `/api/pods/${pod.name}/files?path=/tmp/x`, undefined, as(user)),
        "pod.files.delete",
        { found: true },
        { status: "deleted", path: "/tmp/x" },
      ],
    ];
    for (const [request, op, result, body] of steps) {
      const reply = request();
      const sent = await agent.next("control:call");
      expect(sent.op).toBe(op);
      agent.ok(sent, result);
      expect(await reply).toMatchObject({ status: 200, body });
    }
  });
});

describe("OpenAPI", () => {
  it("documents the upload as multipart with a binary file, and the download as raw bytes", async () => {
    const doc = (await call("GET", "/openapi.json")).body;
    const upload = doc.paths["/api/pods/{name}/files/upload"].post;
    const ref = upload.requestBody.content["multipart/form-data"].schema.$ref as string;
    const form = doc.components.schemas[ref.replace("#/components/schemas/", "")];
    expect(form.properties.file).toMatchObject({ type: "string", format: "binary" });
    expect(form.required).toEqual(["file"]);
    const download = doc.paths["/api/pods/{name}/files/download"].get;
    expect(Object.keys(download.responses["200"].content)).toEqual(["application/octet-stream"]);
    expect(doc.paths["/api/pods/{name}/folders"].post).toBeDefined();
  });
});
