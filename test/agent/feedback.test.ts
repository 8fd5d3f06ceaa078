import { readFile, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Dispatcher } from "../../agent/connection/dispatch";
import { podNames } from "../../agent/docker/naming";
import { buildTar } from "../../agent/docker/tar";
import type { Logger } from "../../agent/logger";
import type { FeedbackVhost } from "../../shared/protocol/feedback";
import { edgeHeaders } from "../support/edge";
import { type Agent, podSpec, startAgent, TEST_EDGE_SECRET, until } from "./helpers";

/**
 * The feedback widget on the host (docs/feedback.md): `pod.feedback.set` against a real PHP pod
 * on the real engine and the agent's own nginx. The vhost injects the script before `</body>` with
 * sub_filter even when the app would gzip its pages; `link` visibility only with the current token
 * (argument, then cookie); a stopped pod cannot be changed and keeps what it had; hostile values
 * never reach nginx.
 */

let agent: Agent;
const web = podSpec("fb-web", { preset: "php" });
const SCRIPT_URL = "http://127.0.0.1:8787/feedback/widget.js";
const TOKEN = "0123456789abcdefghjkmnpqrstvwxyz";
const ROTATED = "zyxwvtsrqpnmkjhgfedcba9876543210";

/** A page that gzips itself whenever the client accepts it (as many PHP apps do). */
const PAGE = `<?php ob_start("ob_gzhandler"); ?><!doctype html>
<html><head><title>fb</title></head><body><h1>feedback test page</h1>
<p>a paragraph</p></body></html>`;

const feedback = (over: Partial<FeedbackVhost> = {}): FeedbackVhost => ({
  enabled: true,
  visibility: "everyone",
  token: TOKEN,
  scriptUrl: SCRIPT_URL,
  ...over,
});
const tag = (token = TOKEN) => `<script src="${SCRIPT_URL}" data-pod-feedback="${token}" async></script>`;

interface Page {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** GET through the ingress as a browser would: gzip accepted, an optional cookie. */
function browse(path = "/", cookie?: string): Promise<Page> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      host: web.domain,
      "accept-encoding": "gzip, deflate",
      ...edgeHeaders(TEST_EDGE_SECRET, { host: web.domain, path }),
    };
    if (cookie) headers.cookie = cookie;
    const req = request({ host: "127.0.0.1", port: agent.port, path, headers, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("latin1"),
          headers: res.headers,
        }),
      );
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

const set = (f: FeedbackVhost) =>
  agent.handlers["pod.feedback.set"]({ name: web.name, feedback: f }, agent.ctx);
const widgets = (page: Page) => page.body.split("data-pod-feedback=").length - 1;

beforeAll(async () => {
  agent = await startAgent();
  expect(await agent.handlers["pod.create"](web, agent.ctx)).toMatchObject({ state: "running" });
  const tar = buildTar([
    { path: "index.php", type: "file", mode: 0o644, uid: 1000, gid: 1000, content: PAGE },
    { path: "notes.txt", type: "file", mode: 0o644, uid: 1000, gid: 1000, content: "plain </body> text\n" },
  ]);
  await agent.docker
    .getContainer(podNames(agent.config.namePrefix, web.name).container)
    .putArchive(tar, { path: "/home/pod_user/app" });
  await until(async () => (await browse()).status === 200, 30_000);
}, 180_000);

afterAll(async () => {
  await agent?.cleanup();
});

describe("pod.feedback.set", () => {
  it("without it the app's own gzip answer passes untouched", async () => {
    const page = await browse();
    expect(page.headers["content-encoding"]).toBe("gzip");
    expect(widgets(page)).toBe(0);
  });

  it("everyone: the script before </body> of every HTML page, gzip or not; other types untouched", async () => {
    expect(await set(feedback())).toEqual({ rendered: true });
    const page = await browse("/some/page");
    expect(page.status).toBe(200);
    expect(page.headers["content-encoding"]).toBeUndefined();
    expect(page.body).toContain(`<p>a paragraph</p>${tag()}</body></html>`);
    expect(widgets(page)).toBe(1);
    expect(page.headers["set-cookie"]).toBeUndefined();
    const text = await browse("/notes.txt");
    expect(text.body).toBe("plain </body> text\n");
    const vhost = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    expect(vhost).toContain('proxy_set_header Accept-Encoding "";');
    expect(vhost).toContain(`sub_filter '</body>' '${tag()}</body>';`);
  });

  it("link: only with the current token; the argument sets a cookie that keeps it on later pages", async () => {
    await set(feedback({ visibility: "link" }));
    expect(widgets(await browse())).toBe(0);

    const opened = await browse(`/?pod_feedback=${TOKEN}`);
    expect(opened.body).toContain(`${tag()}</body>`);
    const cookie = String(opened.headers["set-cookie"]);
    expect(cookie).toContain(`pod_feedback=${TOKEN};`);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");

    expect(widgets(await browse("/later/page", `pod_feedback=${TOKEN}`))).toBe(1);
    expect(widgets(await browse(`/?pod_feedback=${TOKEN.slice(1)}x`))).toBe(0);
    expect(widgets(await browse("/", `pod_feedback=${TOKEN}x`))).toBe(0);
    expect(widgets(await browse("/?pod_feedback="))).toBe(0);

    // rotated: the old link and the old cookie show nothing; the new link does
    await set(feedback({ visibility: "link", token: ROTATED }));
    expect(widgets(await browse(`/?pod_feedback=${TOKEN}`))).toBe(0);
    expect(widgets(await browse("/", `pod_feedback=${TOKEN}`))).toBe(0);
    expect((await browse(`/?pod_feedback=${ROTATED}`)).body).toContain(`${tag(ROTATED)}</body>`);
  });

  it("disabled: nothing injected, the vhost has no sub_filter", async () => {
    await set(feedback({ enabled: false }));
    expect(widgets(await browse(`/?pod_feedback=${TOKEN}`))).toBe(0);
    expect(await readFile(agent.ingress.vhostPath(web.name), "utf8")).not.toContain("sub_filter");
  });

  it("kept across stop and start; a stopped pod cannot be changed and keeps what it had", async () => {
    await set(feedback());
    await agent.handlers["pod.stop"]({ name: web.name }, agent.ctx);
    await expect(set(feedback({ enabled: false }))).rejects.toMatchObject({ code: "internal" });
    expect(await agent.ingress.feedback(web.name)).toEqual(feedback());
    await agent.handlers["pod.start"]({ name: web.name }, agent.ctx);
    const page = await until(async () => {
      const p = await browse();
      return widgets(p) === 1 ? p : null;
    }, 30_000);
    expect(page?.body).toContain(`${tag()}</body>`);
  });

  it("hostile tokens and script URLs are refused by the protocol and by the ingress; the config is untouched", async () => {
    const quiet: Logger = { info() {}, warn() {}, error() {}, child: () => quiet };
    const dispatcher = new Dispatcher(agent.handlers, quiet);
    const before = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    const hostile: Partial<FeedbackVhost>[] = [
      { token: `${TOKEN}"; return 200 "x` },
      { token: `${TOKEN}' ; }` },
      { token: "$host$host$host$host" },
      { token: "SHORT" },
      { scriptUrl: "http://127.0.0.1/x.js'; return 200; #" },
      { scriptUrl: 'http://evil.test/"><img src=x onerror=alert(1)>' },
      { scriptUrl: "http://evil.test/$http_cookie" },
      { scriptUrl: "javascript:alert(1)" },
      { scriptUrl: "http://evil.test/a\nsub_filter x y;" },
      { visibility: "nobody" as "link" },
    ];
    for (const [i, change] of hostile.entries()) {
      const answer = await dispatcher.handle({
        type: "control:call",
        id: `c${i}`,
        idempotencyKey: `k${i}`,
        op: "pod.feedback.set",
        params: { name: web.name, feedback: feedback(change) },
        timeoutMs: 10_000,
      });
      expect(answer.ok, JSON.stringify(change)).toBe(false);
      // past the protocol's schema (a handler called directly), the ingress refuses it too
      await expect(set(feedback(change))).rejects.toMatchObject({ code: "bad_request" });
    }
    expect(await readFile(agent.ingress.vhostPath(web.name), "utf8")).toBe(before);

    // a state file edited by hand into something hostile is ignored at the next render: no widget
    await writeFile(
      join(agent.stateDir, "feedback", `${web.name}.json`),
      JSON.stringify(feedback({ token: `${TOKEN}'; }` })),
    );
    await agent.handlers["pod.restart"]({ name: web.name }, agent.ctx);
    const after = await readFile(agent.ingress.vhostPath(web.name), "utf8");
    expect(after).not.toContain("sub_filter");
    expect(after).not.toContain("'; }");
  });

  it("the pod's deletion forgets them", async () => {
    await set(feedback());
    await agent.handlers["pod.delete"]({ name: web.name }, agent.ctx);
    expect(await agent.ingress.feedback(web.name)).toBeNull();
  });
});
