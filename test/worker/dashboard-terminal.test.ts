import { describe, expect, it } from "vitest";
import { insertHost, insertPod } from "./support/agent";
import { page, signedIn } from "./support/dashboard";

/**
 * The Terminal tab's page (docs/dashboard.md "Terminal"): what the server renders for the browser's
 * script, the API line beside it, and who may see it. The session itself is the API's WebSocket
 * (test/worker/terminal.test.ts) and is driven in Chromium by test/e2e/dashboard.test.ts ("terminal").
 */

async function podOf(user: { user: { active_team_id: string } }, status = "running") {
  const host = await insertHost();
  return insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
}

describe("the Terminal tab", () => {
  it("renders the terminal's box, its scripts, the WebSocket's address and the API lines", async () => {
    const user = await signedIn();
    const pod = await podOf(user);
    const res = await page(`/app/pods/${pod.name}/terminal`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`data-terminal-path="/api/pods/${pod.name}/terminal"`);
    expect(res.text).toContain('data-autostart="true"');
    expect(res.text).toMatch(/<script src="\/app\/assets\/xterm\.js\?v=[a-z0-9]+" defer/);
    expect(res.text).toMatch(/<script src="\/app\/assets\/terminal\.js\?v=[a-z0-9]+" defer/);
    expect(res.text).toMatch(/<link rel="stylesheet" href="\/app\/assets\/xterm\.css\?v=/);
    expect(res.text).toContain(`curl &#39;http://localhost:8787/api/pods/${pod.name}/terminal&#39;`);
    expect(res.text).toContain(`/api/pods/${pod.name}/ssh`);
    expect(res.text).toContain('aria-current="page">Terminal</a>');
    // no inline script, and the status is said in words
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.text).toContain('role="status"');
  });

  it("serves its script from the Worker's own origin", async () => {
    const user = await signedIn();
    const pod = await podOf(user);
    const html = (await page(`/app/pods/${pod.name}/terminal`, { session: user.session })).text;
    const src = /src="(\/app\/assets\/terminal\.js\?v=[a-z0-9]+)"/.exec(html)?.[1];
    const script = await page(src ?? "/app/assets/terminal.js", { session: user.session });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("javascript");
    expect(script.text).toContain('type: "ack"');
  });

  it("allows inline styles (xterm's <style> elements) on this page only; scripts stay 'self'", async () => {
    const user = await signedIn();
    const pod = await podOf(user);
    const terminal = await page(`/app/pods/${pod.name}/terminal`, { session: user.session });
    const csp = terminal.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/style-src 'self' 'unsafe-inline'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    for (const other of [`/app/pods/${pod.name}`, `/app/pods/${pod.name}/files`, "/app"]) {
      const res = await page(other, { session: user.session });
      expect(res.headers.get("content-security-policy") ?? "", other).not.toContain("unsafe-inline");
    }
  });

  it("a stopped pod's tab says so instead of connecting", async () => {
    const user = await signedIn();
    const pod = await podOf(user, "stopped");
    const res = await page(`/app/pods/${pod.name}/terminal`, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain('data-autostart="false"');
    expect(res.text).toContain("The pod is not running");
  });

  it("attacker: another team's pod is a 404 page, and signed out goes to sign-in", async () => {
    const [owner, eve] = await Promise.all([signedIn(), signedIn("Eve")]);
    const pod = await podOf(owner);
    const foreign = await page(`/app/pods/${pod.name}/terminal`, { session: eve.session });
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain(`/api/pods/${pod.name}/terminal`);
    const out = await page(`/app/pods/${pod.name}/terminal`);
    expect(out.status).toBe(302);
    expect(out.headers.get("location")).toBe(
      `/app/sign-in?next=${encodeURIComponent(`/app/pods/${pod.name}/terminal`)}`,
    );
  });
});
