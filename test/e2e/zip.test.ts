import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { buildZip, nodeZip, siteZip } from "../support/zip";
import { signUp } from "./support/api";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * ZIP archives end to end: Worker → R2-staged blob → agent → `tar -x` as pod_user in the pod →
 * the page served through the ingress.
 */

type User = Awaited<ReturnType<typeof signUp>>;

describe("ZIP archives", () => {
  let stack: Stack;
  let alice: User;
  let site: string;

  /** multipart POST as alice: the `zip` part plus form fields */
  const upload = async (
    path: string,
    zip: Uint8Array,
    fields: Record<string, string> = {},
    filename = "site.zip",
  ) => {
    const form = new FormData();
    form.set("zip", new File([zip], filename, { type: "application/zip" }));
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    const res = await fetch(`${stack.api}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}` },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const page = (pod: string, path = "/") =>
    httpGet(stack.edgePort, `${pod}.pods.localhost`, path).catch(() => ({
      status: 0,
      body: "",
    }));
  const pageShows = (pod: string, text: string) =>
    waitFor(
      `${pod} to serve "${text}"`,
      async () => ((await page(pod)).body.includes(text) ? true : undefined),
      60_000,
    );
  const sh = async (pod: string, script: string) => {
    const res = await alice.api.post(`/api/pods/${pod}/exec`, { command: ["sh", "-c", script] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.stdout as string;
  };

  beforeAll(async () => {
    stack = await startStack("zip");
    alice = await signUp(stack.api, "Alice");
    site = `zsite-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(alice.api);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("creates a static site from a ZIP: running means the archive is served", {
    timeout: 120_000,
  }, async () => {
    const res = await upload("/api/pods/from-zip", await siteZip("Zipped site"), { name: site });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ name: site, preset: "static", status: "creating" });
    await waitForPodStatus(alice.api, site, "running");
    expect((await page(site)).body).toContain("<h1>Zipped site</h1>");
    expect((await page(site, "/css/site.css")).body).toContain("teal");
    const events = await waitFor("the reload after unpacking", async () => {
      const list = (await alice.api.get(`/api/pods/${site}/events`)).body.events as { type: string }[];
      return list.some((e) => e.type === "reloaded") ? list.map((e) => e.type) : undefined;
    });
    expect(events).toEqual(expect.arrayContaining(["created", "started", "zip_uploaded", "reloaded"]));
  });

  it("creates a Node.js app from a ZIP (preset detected, name from the file) and runs it", {
    timeout: 180_000,
  }, async () => {
    const res = await upload("/api/pods/from-zip", await nodeZip("node from a zip"), {}, "Shop API.zip");
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.preset).toBe("nodejs");
    expect(res.body.name).toMatch(/^shop-api-[a-z0-9]{6}$/);
    await waitForPodStatus(alice.api, res.body.name, "running");
    // The host reloads the pod on the archive (npm install, the app restarted on server.js) before
    // it counts as running: the default app never answers.
    expect((await page(res.body.name)).body).toContain("node from a zip");
    const events = await waitFor("the reload after unpacking", async () => {
      const list = (await alice.api.get(`/api/pods/${res.body.name}/events`)).body.events as {
        type: string;
      }[];
      return list.some((e) => e.type === "reloaded") ? list.map((e) => e.type) : undefined;
    });
    expect(events).toEqual(
      expect.arrayContaining(["created", "progress", "started", "zip_uploaded", "reloaded"]),
    );
    expect((await sh(res.body.name, "ls ~/app")).split("\n")).toEqual(
      expect.arrayContaining(["package.json", "server.js"]),
    );
  });

  it("re-upload replaces the app, keeps .env, and the new content is served", {
    timeout: 120_000,
  }, async () => {
    const env = await alice.api.put(`/api/pods/${site}/env`, { vars: { KEEP_ME: "yes" } });
    expect(env.status, JSON.stringify(env.body)).toBe(200);
    const v2 = await buildZip([{ name: "index.html", data: "<h1>Version 2</h1>" }]);
    const res = await upload(`/api/pods/${site}/zip`, v2);
    expect(res).toEqual({ status: 200, body: { status: "uploaded", files: 1 } });
    await pageShows(site, "Version 2");
    expect(await sh(site, "ls -A ~/app")).toBe(".env\nindex.html\n");
    expect((await alice.api.get(`/api/pods/${site}/env`)).body.vars).toEqual({ KEEP_ME: "yes" });
  });

  it("refuses a zip-slip archive with 400 and leaves the pod's files untouched", async () => {
    const before = await sh(site, "cd ~/app && find . -exec ls -ld --time-style=+%s {} + | sort");
    const evil = await buildZip([
      { name: "index.html", data: "<h1>pwned</h1>" },
      { name: "../.ssh/authorized_keys", data: "ssh-ed25519 AAAA attacker" },
    ]);
    const res = await upload(`/api/pods/${site}/zip`, evil);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/zip-slip/);
    expect(await sh(site, "cd ~/app && find . -exec ls -ld --time-style=+%s {} + | sort")).toBe(before);
    expect(await sh(site, "cat ~/.ssh/authorized_keys; ls -A ~/.pod | grep zip- || true")).not.toContain(
      "attacker",
    );
    expect((await page(site)).body).toContain("Version 2");
  });

  it("refuses an archive of another runtime with 400", async () => {
    const res = await upload(`/api/pods/${site}/zip`, await nodeZip());
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/nodejs app .* not static/);
  });

  it("starts a stopped pod first", { timeout: 120_000 }, async () => {
    expect((await alice.api.post(`/api/pods/${site}/stop`)).body.status).toBe("stopped");
    const res = await upload(`/api/pods/${site}/zip`, await siteZip("Version 3"));
    expect(res).toEqual({ status: 200, body: { status: "uploaded", files: 2 } });
    expect((await alice.api.get(`/api/pods/${site}`)).body.status).toBe("running");
    await pageShows(site, "Version 3");
  });
});
