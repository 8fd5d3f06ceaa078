import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { FAIR_SHARE_LIMITS, fairShareLimiter, podCap } from "../../worker/http/rate-limit";
import { FakeAgent, insertHost, insertPod, type TestHost } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * A pod's Overview, Files and Environment tabs (worker/dashboard/routes/pod-{overview,files,env}.tsx),
 * rendered with real rows for a pod on a host a FakeAgent plays: what the page shows, the API calls
 * its forms make, the curl lines, and what an attacker's input (a file name that is markup, another
 * team's pod, a signed-out browser) gets. Env values must never be in a page's HTML.
 */

afterEach(() => FakeAgent.closeAll());

const EVIL = "<img src=x onerror=alert(1)>";

async function setup(status = "running") {
  const [user, host] = await Promise.all([signedIn(), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
  return { user, host, pod };
}

const online = (host: TestHost, pod: string) =>
  FakeAgent.online(host, [{ name: pod, state: "running", ip: "10.0.0.2" }]);

const relayOf = (sent: { params: unknown }) => (sent.params as { relay: string }).relay;

/** the agent sending a file's bytes through the relay of a `pod.files.download` call */
const sendFile = (host: TestHost, sent: { params: unknown }, data: Uint8Array) =>
  exports.default.fetch(`http://localhost/agent/relay/${relayOf(sent)}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${host.token}`, "content-length": String(data.length) },
    body: data,
  });

const listing = [
  { name: "assets", permissions: "drwxr-xr-x", size: 4096, isDir: true },
  { name: EVIL, permissions: "-rw-r--r--", size: 12, isDir: false },
  { name: "index.html", permissions: "-rw-r--r--", size: 20, isDir: false },
  { name: "logo.png", permissions: "-rw-r--r--", size: 6, isDir: false },
  { name: "huge.log", permissions: "-rw-r--r--", size: 6 * 1024 * 1024, isDir: false },
];

describe("the Overview tab", () => {
  it("shows status, URL, SSH command, plan, the diagnosis with its fix, every action and the curl lines", async () => {
    const { user, pod } = await setup();
    const diagnosis = {
      class: "missing_module",
      title: "A module is missing",
      detail: `Error: Cannot find module '${EVIL}'`,
      fix: "Run npm install",
      auto_fixable: true,
      confidence: 0.9,
      fix_action: "install_dependencies",
    };
    await env.DB.prepare(
      "UPDATE pods SET ssh_port = 2234, preset = 'nodejs', app_health_diagnosis = ? WHERE id = ?",
    )
      .bind(JSON.stringify(diagnosis), pod.id)
      .run();
    await env.DB.prepare(
      "INSERT INTO pod_metrics (pod_id, recorded_at, cpu_usage, memory_usage, storage_used, network_in, network_out) VALUES (?, ?, 12.5, 40, 2048, 0, 0)",
    )
      .bind(pod.id, new Date().toISOString())
      .run();
    const res = await page(`/app/pods/${pod.name}`, { session: user.session });
    expect(res.status).toBe(200);
    const html = res.text;
    expect(html).toContain('class="badge status-running"');
    expect(html).toContain(`http://${pod.name}.${env.POD_DOMAIN}`);
    expect(html).toContain(`data-copy="ssh -p 2234 pod_user@ssh.example.test"`);
    expect(html).toContain("Launch · $5.00/month");
    expect(html).toContain("CPU 12.5 %, memory 40 %");
    // the diagnosis, its text escaped, and its one-click fix
    expect(html).toContain("A module is missing");
    expect(html).toContain("Cannot find module &#39;&lt;img src=x onerror=alert(1)&gt;&#39;");
    expect(html).not.toContain(EVIL);
    expect(html).toContain(`data-api="/api/pods/${pod.name}/diagnosis/fix"`);
    for (const verb of ["start", "stop", "restart", "reload", "resize", "clone"]) {
      expect(html, verb).toContain(`data-api="/api/pods/${pod.name}/${verb}"`);
    }
    expect(html).toContain(`data-api="/api/pods/${pod.name}/node-version" data-method="PUT"`);
    expect(html).toMatch(
      /<option value="build">Build: 1 CPU, 1 GB memory, 10 GB disk, \$12.00\/month<\/option>/,
    );
    expect(html).toContain('data-then="go:/app/pods/{name}"');
    // delete: typed name, the button off until it matches, back to the list after
    expect(html).toContain(`data-api="/api/pods/${pod.name}" data-method="DELETE" data-then="go:/app"`);
    expect(html).toContain(`data-must-equal="${pod.name}"`);
    expect(html).toMatch(/<button type="submit" class="danger" disabled="">Delete /);
    expect(html).toContain(`curl -X POST &#39;http://localhost:8787/api/pods/${pod.name}/clone&#39;`);
    expect(html).toContain(`curl &#39;http://localhost:8787/api/pods/${pod.name}/ssh&#39;`);
  });

  it("says when SSH is not ready and there is nothing wrong with the app; no Node switch for static", async () => {
    const { user, pod } = await setup();
    const html = (await page(`/app/pods/${pod.name}`, { session: user.session })).text;
    expect(html).toContain("has no SSH port allocated yet");
    expect(html).toContain("found nothing wrong");
    expect(html).not.toContain("/diagnosis/fix");
    expect(html).not.toContain("/node-version");
  });
});

describe("the Files tab", () => {
  it("lists a folder through the Files API's verb, escaping and URL-encoding tenant file names", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const reply = page(`/app/pods/${pod.name}/files`, { session: user.session });
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.files.list", params: { path: "/home/pod_user/app" } });
    agent.ok(sent, { found: true, entries: listing });
    const res = await reply;
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(EVIL);
    expect(res.text).toContain("&lt;img src=x onerror=alert(1)&gt;");
    const encoded = encodeURIComponent(EVIL);
    expect(res.text).toContain(
      `href="/app/pods/${pod.name}/files?path=%2Fhome%2Fpod_user%2Fapp&amp;entry=${encoded}"`,
    );
    expect(res.text).toContain(
      `href="/api/pods/${pod.name}/files/download?path=${encodeURIComponent(`/home/pod_user/app/${EVIL}`)}"`,
    );
    expect(res.text).toContain(`href="/app/pods/${pod.name}/files?path=%2Fhome%2Fpod_user%2Fapp%2Fassets"`);
    // upload, new folder and the curl lines
    expect(res.text).toContain(`data-upload="/api/pods/${pod.name}/files/upload"`);
    expect(res.text).toContain('data-dir="/home/pod_user/app"');
    expect(res.text).toMatch(/<script src="\/app\/assets\/files.js\?v=[a-z0-9]+" defer=""><\/script>/);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/folders"`);
    expect(res.text).toContain(
      `curl &#39;http://localhost:8787/api/pods/${pod.name}/files?path=%2Fhome%2Fpod_user%2Fapp&#39;`,
    );
  });

  it("opens a text file in the editor, with rename, copy and delete for it", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const reply = page(`/app/pods/${pod.name}/files?path=/home/pod_user/app&entry=index.html`, {
      session: user.session,
    });
    agent.ok(await agent.next("control:call"), { found: true, entries: listing });
    const read = await agent.next("control:call");
    expect(read).toMatchObject({
      op: "pod.files.download",
      params: { path: "/home/pod_user/app/index.html" },
    });
    const text = "\n<h1>héllo</h1>\n";
    const bytes = new TextEncoder().encode(text);
    expect((await sendFile(host, read, bytes)).status).toBe(201);
    agent.ok(read, { found: true, size: bytes.length, sent: true });
    const res = await reply;
    expect(res.status).toBe(200);
    // the textarea's first newline is eaten by HTML parsers: the page adds one so a leading one survives
    expect(res.text).toContain('rows="24">\n\n&lt;h1&gt;héllo&lt;/h1&gt;\n</textarea>');
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/files/content" data-method="PUT"`);
    expect(res.text).toContain('name="path" value="/home/pod_user/app/index.html"');
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/files/rename"`);
    expect(res.text).toContain(`data-api="/api/pods/${pod.name}/files/copy"`);
    expect(res.text).toContain(
      `data-api="/api/pods/${pod.name}/files?path=%2Fhome%2Fpod_user%2Fapp%2Findex.html" data-method="DELETE"`,
    );
    expect(res.text).toContain("data-confirm=");
  });

  it("does not open a binary or a huge file in the editor, says why and offers the download", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const binary = page(`/app/pods/${pod.name}/files?entry=logo.png`, { session: user.session });
    agent.ok(await agent.next("control:call"), { found: true, entries: listing });
    const read = await agent.next("control:call");
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]);
    await sendFile(host, read, png);
    agent.ok(read, { found: true, size: png.length, sent: true });
    const shown = await binary;
    expect(shown.text).toContain("not UTF-8 text (a binary file)");
    expect(shown.text).not.toContain("<textarea");
    expect(shown.text).toContain(
      `/api/pods/${pod.name}/files/download?path=%2Fhome%2Fpod_user%2Fapp%2Flogo.png`,
    );

    const huge = page(`/app/pods/${pod.name}/files?entry=huge.log`, { session: user.session });
    agent.ok(await agent.next("control:call"), { found: true, entries: listing });
    const big = await huge;
    expect(big.text).toContain("it is 6.0 MB, and the editor opens files up to 5 MB");
    await agent.expectNone("control:call"); // never read
  });

  it("an entry that is not in the listing is not read; a folder outside the pod's roots is the API's 400", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const reply = page(`/app/pods/${pod.name}/files?entry=${encodeURIComponent("../../etc/passwd")}`, {
      session: user.session,
    });
    agent.ok(await agent.next("control:call"), { found: true, entries: listing });
    expect((await reply).text).toContain("There is no <code>../../etc/passwd</code> in this folder");
    await agent.expectNone("control:call");
    const outside = await page(`/app/pods/${pod.name}/files?path=/etc`, { session: user.session });
    expect(outside.status).toBe(400);
    expect(outside.text).toContain("path: must be inside /home/pod_user, /var/www, /tmp");
  });

  it("counts against the pod's files fair share like the API: over it, a 429 page and no host call", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const { perPod, windowMs } = FAIR_SHARE_LIMITS.files;
    const limiter = fairShareLimiter(env, "files", user.user.active_team_id);
    for (let i = 0; i < perPod; i++)
      await limiter.hitEach([{ key: podCap(pod.name), limit: perPod }], windowMs);
    const res = await page(`/app/pods/${pod.name}/files`, { session: user.session });
    expect(res.status).toBe(429);
    expect(res.text).toContain("too many files operations");
    await agent.expectNone("control:call");
  });

  it("says the pod must run when it is stopped", async () => {
    const { user, pod } = await setup("stopped");
    const res = await page(`/app/pods/${pod.name}/files`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("The folder cannot be listed");
    expect(res.text).toContain("not running");
  });
});

describe("the Environment tab", () => {
  it("shows the names with masked values, never the values, and the editor's API calls", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const reply = page(`/app/pods/${pod.name}/env`, { session: user.session });
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.env.get", params: { name: pod.name } });
    const secret = "sk_live_Zx9-very-secret-value";
    agent.ok(sent, {
      path: "/home/pod_user/app/.env",
      exists: true,
      vars: { STRIPE_KEY: secret, DATABASE_URL: "postgres://u:hunter2@db/x" },
    });
    const res = await reply;
    expect(res.status).toBe(200);
    expect(res.text).toContain('value="STRIPE_KEY"');
    expect(res.text).toContain('value="DATABASE_URL"');
    expect(res.text).not.toContain(secret);
    expect(res.text).not.toContain("hunter2");
    expect(res.text).toContain('type="password" value=""');
    expect(res.text).toContain(`data-env="/api/pods/${pod.name}/env"`);
    expect(res.text).toContain(`data-restart="/api/pods/${pod.name}/restart"`);
    expect(res.text).toContain("Reveal values");
    expect(res.text).toMatch(/<script src="\/app\/assets\/env.js\?v=[a-z0-9]+" defer=""><\/script>/);
    expect(res.text).toContain(`curl -X PUT &#39;http://localhost:8787/api/pods/${pod.name}/env&#39;`);
    expect(res.text).toContain(`curl -X DELETE &#39;http://localhost:8787/api/pods/${pod.name}/env&#39;`);
  });

  it("says why the variables cannot be read when the host is away", async () => {
    const { user, pod } = await setup();
    const res = await page(`/app/pods/${pod.name}/env`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("The variables cannot be read now");
    expect(res.text).not.toContain("data-env=");
  });

  it("serves its script and the files tab's from this origin", async () => {
    for (const name of ["env.js", "files.js"]) {
      const res = await page(`/app/assets/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type"), name).toMatch(/^text\/javascript/);
    }
  });
});

describe("the pod tabs against an attacker", () => {
  it("show another team's pod as a 404 page, exactly like a missing one, without asking its host", async () => {
    const { host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const eve = await signedIn("Eve");
    for (const name of [pod.name, "no-such-pod"]) {
      for (const tab of ["", "/files", "/env", `/files?path=/home/pod_user&entry=index.html`]) {
        const res = await page(`/app/pods/${name}${tab}`, { session: eve.session });
        expect(res.status, tab).toBe(404);
        expect(res.headers.get("content-type"), tab).toMatch(/^text\/html/);
        expect(res.text, tab).toContain("There is no such pod in this team.");
      }
    }
    await agent.expectNone("control:call");
  });

  it("send a signed-out browser to sign-in, and ignore a bearer token", async () => {
    const { user, pod } = await setup();
    for (const tab of ["", "/files", "/env"]) {
      const res = await page(`/app/pods/${pod.name}${tab}`);
      expect(res.status, tab).toBe(302);
      expect(res.headers.get("location"), tab).toBe(
        `/app/sign-in?next=${encodeURIComponent(`/app/pods/${pod.name}${tab}`)}`,
      );
      const bearer = await page(`/app/pods/${pod.name}${tab}`, {
        headers: { authorization: `Bearer ${user.token}` },
      });
      expect(bearer.status, tab).toBe(302);
    }
  });
});
