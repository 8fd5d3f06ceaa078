import { createHash, randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FILE_UPLOAD_MAX_BYTES } from "../../shared/limits";
import { signUp } from "./support/api";
import { dockerExec, dockerInspect } from "./support/docker";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

const APP = "/home/pod_user/app";
const STAGING = "/home/pod_user/.pod/uploads";
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/**
 * The Files endpoints end to end (Worker + agent + Docker): bytes streamed through a relay, every
 * operation as pod_user inside the pod, and the ways a caller or the pod's own code could try to
 * reach outside it.
 */
describe("files: list, read, write, upload, download, delete, rename, copy, folders", () => {
  let stack: Stack;
  let alice: User;
  let bob: User;
  let site: string;
  let other: string;

  const files = (path = "") => `/api/pods/${site}/files${path}`;
  const q = (path: string) => `?path=${encodeURIComponent(path)}`;
  const container = (pod: string) => `${stack.prefix}-${pod}`;
  /** as the pod's own code would, in its container */
  const inPod = (...argv: string[]) => dockerExec(container(site), argv);

  const upload = async (user: User, form: FormData, pod = site) => {
    const res = await fetch(`${stack.api}/api/pods/${pod}/files/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}` },
      body: form,
    });
    return {
      status: res.status,
      body: (await res.json()) as { error?: string; status?: string; path?: string },
    };
  };
  const download = (path: string, user = alice) =>
    fetch(`${stack.api}${files("/download")}${q(path)}`, {
      headers: { authorization: `Bearer ${user.token}` },
    });

  beforeAll(async () => {
    stack = await startStack("files");
    alice = await signUp(stack.api, "Alice");
    bob = await signUp(stack.api, "Bob");
    const tag = stack.prefix.slice(-4);
    site = `files-${tag}`;
    other = `other-${tag}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [
      [site, "static"],
      [other, "static"],
    ]);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("writes text (creating parents), reads it back and lists it in the File entry shape", async () => {
    const content = '<h1>héllo 🌍</h1>\n\ttabs, "quotes" and a NUL \u0000 survive\n';
    const put = await alice.api.put(files("/content"), { path: `${APP}/new/deep/index.html`, content });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual({ status: "saved", path: `${APP}/new/deep/index.html` });

    const got = await alice.api.get(`${files("/content")}${q(`${APP}/new/deep/index.html`)}`);
    expect(got).toMatchObject({ status: 200, body: { path: `${APP}/new/deep/index.html`, content } });
    expect(await inPod("stat", "-c", "%u %a", `${APP}/new/deep/index.html`)).toBe("1000 644\n");

    await inPod("sh", "-c", `ln -s deep ${APP}/new/link && printf x > "${APP}/new/odd	name"`);
    const list = await alice.api.get(`${files()}${q(`${APP}/new`)}`);
    expect(list.status).toBe(200);
    // a directory's size is its file system's own figure (4096 on ext4, the entries' names on btrfs)
    const dirSize = (await inPod("stat", "-c", "%s", `${APP}/new/deep`)).trim();
    expect(list.body).toEqual({
      path: `${APP}/new`,
      files: [
        { name: "deep", permissions: "drwxr-xr-x", size: dirSize, is_dir: true },
        { name: "link", permissions: "lrwxrwxrwx", size: "4", is_dir: true },
        { name: "odd\tname", permissions: "-rw-r--r--", size: "1", is_dir: false },
      ],
    });

    const root = await alice.api.get(files());
    expect(root.body.path).toBe(APP);
    expect(root.body.files.map((f: { name: string }) => f.name)).toContain("index.html");
  });

  it("lists a missing directory as [] and refuses a file as a directory", async () => {
    const missing = await alice.api.get(`${files()}${q("/tmp/not/there")}`);
    expect(missing).toMatchObject({ status: 200, body: { path: "/tmp/not/there", files: [] } });
    const file = await alice.api.get(`${files()}${q(`${APP}/index.html`)}`);
    expect(file.status).toBe(400);
    expect(file.body.error).toMatch(/not a directory/);
  });

  it("round-trips a 32 MiB binary upload and download byte for byte", async () => {
    const data = new Uint8Array(randomBytes(FILE_UPLOAD_MAX_BYTES));
    const form = new FormData();
    form.set("file", new File([data], "big.bin"));
    form.set("path", "/tmp/up");
    const up = await upload(alice, form);
    expect(up, JSON.stringify(up.body)).toEqual({
      status: 200,
      body: { status: "uploaded", path: "/tmp/up/big.bin" },
    });
    expect((await inPod("sha256sum", "/tmp/up/big.bin")).split(" ")[0]).toBe(sha256(data));

    const res = await download("/tmp/up/big.bin");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-length")).toBe(String(data.length));
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="big.bin"; filename*=UTF-8''big.bin`,
    );
    const back = new Uint8Array(await res.arrayBuffer());
    expect(back.length).toBe(data.length);
    expect(sha256(back)).toBe(sha256(data));
  });

  it("uploads into the app root by default, replacing a file atomically and keeping its mode", async () => {
    await inPod("sh", "-c", `printf old > ${APP}/run.sh && chmod 755 ${APP}/run.sh`);
    const form = new FormData();
    form.set("file", new File(["#!/bin/sh\necho new\n"], "run.sh"));
    const up = await upload(alice, form);
    expect(up).toEqual({ status: 200, body: { status: "uploaded", path: `${APP}/run.sh` } });
    expect(await inPod("sh", "-c", `stat -c %a ${APP}/run.sh && ${APP}/run.sh`)).toBe("755\nnew\n");
    expect(await inPod("sh", "-c", `ls -A ${APP} | grep -c '^.upload-' || true`)).toBe("0\n");
  });

  it("takes the form's fields in any order: a file before its path waits in staging, then moves in place", async () => {
    for (const dir of ["/tmp/late", `${APP}/late`]) {
      const form = new FormData();
      form.append("file", new File([`into ${dir}\n`], "order.txt"));
      form.append("path", dir);
      const up = await upload(alice, form);
      expect(up, dir).toEqual({ status: 200, body: { status: "uploaded", path: `${dir}/order.txt` } });
      expect(await inPod("sh", "-c", `cat ${dir}/order.txt; ls -A ${dir}; ls -A ${STAGING}`)).toBe(
        `into ${dir}\norder.txt\n`,
      );
    }
  });

  it("refuses uploads over 32 MiB with 413 and a missing file part with 400", async () => {
    const form = new FormData();
    form.set("file", new File([new Uint8Array(FILE_UPLOAD_MAX_BYTES + 1)], "too-big.bin"));
    const big = await upload(alice, form);
    expect(big.status).toBe(413);
    expect(big.body.error).toMatch(/32 MiB/);
    // cut off while it streamed: nothing of it is left in the pod
    expect(await inPod("sh", "-c", `ls -A ${STAGING} ${APP} | grep -c 'too-big\\|^.upload-' || true`)).toBe(
      "0\n",
    );
    const none = new FormData();
    none.set("path", "/tmp");
    expect(await upload(alice, none)).toMatchObject({ status: 400, body: { error: /^file: / } });
  });

  it("a caller leaving mid-download ends the agent's read in the pod", async () => {
    await inPod("sh", "-c", "head -c 100000000 /dev/zero > /tmp/huge.bin");
    const abort = new AbortController();
    const res = await fetch(`${stack.api}${files("/download")}${q("/tmp/huge.bin")}`, {
      headers: { authorization: `Bearer ${alice.token}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe("100000000");
    const readers = () =>
      inPod("sh", "-c", 'for c in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$c"; echo; done 2>/dev/null');
    const reader = res.body?.getReader();
    await reader?.read();
    expect(await readers()).toContain("huge.bin"); // held back by the caller's pace
    abort.abort();
    await reader?.cancel().catch(() => undefined);
    // The relay's pipe breaks, the agent's PUT fails, and it tears down the `docker exec` reading
    // the file: nothing of the download script is left in the pod.
    await waitFor(
      "the download's reader to go",
      async () => ((await readers()).includes("huge.bin") ? undefined : true),
      20_000,
    );
    await inPod("rm", "-f", "/tmp/huge.bin");
  });

  it("a caller leaving mid-upload leaves nothing in the pod", async () => {
    const boundary = "cutcutcut";
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="path"\r\n\r\n/tmp/cut\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`;
    const declared = head.length + 16 * 1024 * 1024;
    const req = request(`${stack.api}/api/pods/${site}/files/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(declared),
      },
    });
    req.on("error", () => undefined); // cut off on purpose
    req.write(head);
    req.write(randomBytes(4 * 1024 * 1024));
    // Bytes reach the pod while the caller is still sending: the temp file grows in /tmp/cut.
    await waitFor(
      "the upload to reach the pod",
      async () =>
        (await inPod("sh", "-c", "ls -A /tmp/cut 2>/dev/null")).includes(".upload-") ? true : undefined,
      20_000,
    );
    req.destroy();
    // The Worker never commits a form that did not end, and what was received is removed.
    await waitFor(
      "the received bytes to go",
      async () => ((await inPod("sh", "-c", "ls -A /tmp/cut")) === "" ? true : undefined),
      20_000,
    );
    expect(await inPod("sh", "-c", "ls -A /tmp/cut; ls -A ~/.pod/uploads 2>/dev/null")).toBe("");
  });

  it("creates trees, renames, copies recursively and deletes recursively", async () => {
    const mk = await alice.api.post(`/api/pods/${site}/folders`, { path: "/tmp/t/a/b/c" });
    expect(mk).toMatchObject({ status: 200, body: { status: "created", path: "/tmp/t/a/b/c" } });
    expect((await alice.api.post(`/api/pods/${site}/folders`, { path: "/tmp/t/a/b/c" })).status).toBe(200);
    await inPod("sh", "-c", "printf one > /tmp/t/a/b/c/f && ln -s c/f /tmp/t/a/b/l");

    const cp = await alice.api.post(files("/copy"), { source_path: "/tmp/t/a", dest_path: "/tmp/t2/copy" });
    expect(cp).toMatchObject({
      status: 200,
      body: { status: "copied", source_path: "/tmp/t/a", dest_path: "/tmp/t2/copy" },
    });
    expect(await inPod("sh", "-c", "cat /tmp/t2/copy/b/c/f; readlink /tmp/t2/copy/b/l")).toBe("onec/f\n");

    const mv = await alice.api.post(files("/rename"), {
      old_path: "/tmp/t2/copy",
      new_path: "/tmp/t3/moved",
    });
    expect(mv).toMatchObject({
      status: 200,
      body: { status: "renamed", old_path: "/tmp/t2/copy", new_path: "/tmp/t3/moved" },
    });
    expect(await inPod("sh", "-c", "cat /tmp/t3/moved/b/c/f; test -e /tmp/t2/copy || echo gone")).toBe(
      "onegone\n",
    );

    const exists = await alice.api.post(files("/rename"), {
      old_path: "/tmp/t/a",
      new_path: "/tmp/t3/moved",
    });
    expect(exists.status).toBe(409);
    const inside = await alice.api.post(files("/copy"), { source_path: "/tmp/t", dest_path: "/tmp/t/a/x" });
    expect(inside.status).toBe(400);

    const del = await alice.api.delete(`${files()}${q("/tmp/t3")}`);
    expect(del).toMatchObject({ status: 200, body: { status: "deleted", path: "/tmp/t3" } });
    expect(await inPod("sh", "-c", "test -e /tmp/t3 || echo gone")).toBe("gone\n");
    for (const root of ["/home/pod_user", APP, "/tmp", "/var/www"]) {
      const res = await alice.api.delete(`${files()}${q(root)}`);
      expect(res.status, root).toBe(400);
    }
  });

  it("answers 404 {error} for a missing file on read, download, delete, rename and copy", async () => {
    const p = `${APP}/no-such-file`;
    const results = [
      await alice.api.get(`${files("/content")}${q(p)}`),
      await alice.api.delete(`${files()}${q(p)}`),
      await alice.api.post(files("/rename"), { old_path: p, new_path: `${p}-2` }),
      await alice.api.post(files("/copy"), { source_path: p, dest_path: `${p}-2` }),
    ];
    for (const res of results)
      expect(res).toMatchObject({ status: 404, body: { error: expect.any(String) } });
    const dl = await download(p);
    expect(dl.status).toBe(404);
    expect(await dl.json()).toEqual({ error: expect.any(String) });
  });

  it("refuses traversal, relative and outside paths with 400", async () => {
    for (const path of [
      "/home/pod_user/../../etc/passwd",
      "app/index.html",
      "/etc/passwd",
      "/home/pod_userX",
    ]) {
      const read = await alice.api.get(`${files("/content")}${q(path)}`);
      expect(read.status, path).toBe(400);
      const write = await alice.api.put(files("/content"), { path, content: "x" });
      expect(write.status, path).toBe(400);
    }
    // encoded dots are decoded before the check
    const encoded = await alice.api.get(`${files("/content")}?path=/home/pod_user/%2e%2e/%2e%2e/etc/passwd`);
    expect(encoded.status).toBe(400);
    expect(encoded.body.error).toMatch(/\.\./);
  });

  describe("symlinks planted by the pod's own code", () => {
    beforeAll(async () => {
      await inPod(
        "sh",
        "-c",
        `cd ${APP} && ln -s /etc/shadow shadow && ln -s /etc/passwd passwd && ln -s /etc etc && ln -s "$1" neighbour`,
        "sh",
        `/var/lib/docker/volumes/${stack.prefix}-${other}-home/_data/app/secret.txt`,
      );
      await dockerExec(container(other), ["sh", "-c", `printf 'neighbour secret' > ${APP}/secret.txt`]);
    });

    it("cannot read /etc/shadow through a link: 403, nothing leaked", async () => {
      const read = await alice.api.get(`${files("/content")}${q(`${APP}/shadow`)}`);
      expect(read.status).toBe(403);
      expect(JSON.stringify(read.body)).not.toMatch(/root:/);
      const dl = await download(`${APP}/shadow`);
      expect(dl.status).toBe(403);
      expect(await dl.text()).not.toMatch(/root:/);
      const copy = await alice.api.post(files("/copy"), {
        source_path: `${APP}/shadow`,
        dest_path: "/tmp/sh",
      });
      // the link is copied as a link: still unreadable
      expect(copy.status).toBe(200);
      expect((await alice.api.get(`${files("/content")}${q("/tmp/sh")}`)).status).toBe(403);
    });

    it("writes replace a link instead of writing through it; writes outside what pod_user owns are 403", async () => {
      const before = await inPod("cat", "/etc/passwd");
      const put = await alice.api.put(files("/content"), { path: `${APP}/passwd`, content: "mine\n" });
      expect(put.status).toBe(200);
      expect(await inPod("cat", "/etc/passwd")).toBe(before);
      expect(await inPod("sh", "-c", `test -L ${APP}/passwd || cat ${APP}/passwd`)).toBe("mine\n");

      const through = await alice.api.put(files("/content"), { path: `${APP}/etc/evil`, content: "x" });
      expect(through.status).toBe(403);
      const www = await alice.api.put(files("/content"), { path: "/var/www/html/x.html", content: "x" });
      expect(www.status).toBe(403);
      const form = new FormData();
      form.set("file", new File(["x"], "cron"));
      form.set("path", `${APP}/etc`);
      expect((await upload(alice, form)).status).toBe(403);
      const del = await alice.api.delete(`${files()}${q(`${APP}/etc/hostname`)}`);
      expect(del.status).toBe(403);
    });

    it("a link to another pod's volume on the host resolves inside this pod: nothing there", async () => {
      expect(await dockerInspect("volume", `${stack.prefix}-${other}-home`)).not.toBeNull();
      const read = await alice.api.get(`${files("/content")}${q(`${APP}/neighbour`)}`);
      expect(read.status).toBe(404);
      const dl = await download(`${APP}/neighbour`);
      expect(dl.status).toBe(404);
      expect(await dl.text()).not.toContain("neighbour secret");
    });
  });

  it("hides another team's pod (404) on every route", async () => {
    const form = new FormData();
    form.set("file", new File(["x"], "x.txt"));
    const results = [
      await bob.api.get(`${files()}`),
      await bob.api.get(`${files("/content")}${q(`${APP}/index.html`)}`),
      await bob.api.put(files("/content"), { path: `${APP}/x`, content: "x" }),
      await bob.api.delete(`${files()}${q(`${APP}/index.html`)}`),
      await bob.api.post(files("/rename"), { old_path: `${APP}/index.html`, new_path: `${APP}/y` }),
      await bob.api.post(files("/copy"), { source_path: `${APP}/index.html`, dest_path: `${APP}/y` }),
      await bob.api.post(`/api/pods/${site}/folders`, { path: `${APP}/z` }),
      await upload(bob, form),
    ];
    for (const res of results) expect(res.status).toBe(404);
    expect((await download(`${APP}/index.html`, bob)).status).toBe(404);
  });
});
