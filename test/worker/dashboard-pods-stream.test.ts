import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertPod } from "./support/agent";
import { freshIp } from "./support/client";
import { DASHBOARD_ORIGIN, page, signedIn } from "./support/dashboard";

/**
 * The pods list as it is sent (worker/dashboard/stream-page.tsx, pages/pods-list.tsx): its head
 * first, before the list is read, then the body; the rows are one escaping template rather than JSX,
 * so what an attacker can put in a row (a pod row written straight into D1 with markup in its name
 * and preset) must still arrive as text, in the page and in the fragment htmx polls.
 */

const EVIL = "<img src=x onerror=alert(1)>";
const ESCAPED = "&lt;img src=x onerror=alert(1)&gt;";

describe("the pods list, streamed", () => {
  it("sends the head as its own first part, then the whole page", async () => {
    const user = await signedIn();
    await insertPod({ hostId: null, teamId: user.user.active_team_id });
    const res = await exports.default.fetch(
      new Request(`${DASHBOARD_ORIGIN}/app`, {
        headers: {
          cookie: `pod_session=${user.session}`,
          "cf-connecting-ip": freshIp(),
          "sec-fetch-site": "same-origin",
        },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("cache-control")).toContain("no-store");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const first = decoder.decode((await reader.read()).value);
    expect(first.startsWith('<!doctype html><html lang="en"><head>')).toBe(true);
    expect(first.endsWith("</head>")).toBe(true);
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest += decoder.decode(r.value, { stream: true });
    expect(rest.startsWith("<body>")).toBe(true);
    expect(rest.endsWith("</body></html>")).toBe(true);
    expect(rest).toContain('<tbody id="pod-rows"');
  });

  it("shows markup in a pod's name and preset as text, in the page and in the polled rows", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, name: `evil${EVIL}` });
    await env.DB.prepare("UPDATE pods SET preset = ? WHERE id = ?").bind(EVIL, pod.id).run();
    for (const path of ["/app", "/app/pods/rows?offset=0&limit=50"]) {
      const res = await page(path, { session: user.session });
      expect(res.status, path).toBe(200);
      expect(res.text, path).not.toContain(EVIL);
      expect(res.text, path).toContain(`<td>${ESCAPED}</td>`);
      expect(res.text, path).toContain(`>evil${ESCAPED}</a>`);
      // the link to the pod's page carries the name percent-encoded
      expect(res.text, path).toContain(`href="/app/pods/${encodeURIComponent(`evil${EVIL}`)}"`);
    }
  });
});
