import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GitServer, startGitServer } from "../support/git-server";
import { type Received, startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * Alerts end to end (docs/alerts.md): the Worker in workerd, the real agent and Docker, and a webhook
 * receiver on 127.0.0.1 (test/support/webhook-receiver.ts; ALLOW_ALERT_LOOPBACK). A deploy that
 * fails its build and an app made to crash-loop each reach the signed webhook ≤ 60 s after the
 * event, with the intervals this test sets: the agent samples and checks health every 2 s, and an
 * app is `app_unhealthy` after 10 s of diagnosis (ALERT_UNHEALTHY_AFTER_S). Fixing the app sends
 * `alert.resolved`. The times are printed.
 */

const LIMIT_MS = 60_000;

const PACKAGE = `printf '%s' '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"}}' > package.json`;

const CRASHING_APP = `set -e
cd ~/app
${PACKAGE}
printf '%s' 'console.error("boom: the app exits at start"); process.exit(1);' > server.js
# The app now exits at once: sv may time out waiting for it to stay up (exit 1).
sv restart app || true`;

const WORKING_APP = `set -e
cd ~/app
${PACKAGE}
printf '%s' 'require("http").createServer((q, s) => s.end("fixed")).listen(process.env.PORT);' > server.js
sv restart app || true`;

interface Alert {
  id: string;
  type: string;
  event: string;
  summary: string;
  pod: { name: string } | null;
  incident: { id: string } | null;
}

/** The receiver's checks of docs/alerts.md: HMAC-SHA256 of `<t>.<body>`, a fresh `t`, the delivery id. */
function verified(hit: Received, secret: string): Alert {
  const header = hit.headers["podhost-signature"] ?? "";
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  const v1 = /(?:^|,)v1=([0-9a-f]{64})/.exec(header)?.[1];
  expect(t, header).toBeDefined();
  expect(v1, header).toBeDefined();
  const expected = createHmac("sha256", secret).update(`${t}.${hit.body}`).digest();
  expect(timingSafeEqual(expected, Buffer.from(v1 ?? "", "hex"))).toBe(true);
  expect(Math.abs(Date.now() / 1000 - Number(t))).toBeLessThan(300);
  const alert = JSON.parse(hit.body) as Alert;
  expect(hit.headers["podhost-delivery"]).toBe(alert.id);
  expect(hit.headers["podhost-event"]).toBe(alert.type);
  return alert;
}

describe("alerts end to end: a failed deploy and a crash-looping app reach a signed webhook within 60 s", () => {
  let stack: Stack;
  let git: GitServer;
  let receiver: WebhookReceiver;
  let alice: Awaited<ReturnType<typeof signUp>>;
  let app: string;
  let secret: string;
  const path = "/hooks/podhost";

  /** waits for the `n`th alert at the receiver (1-based) */
  const nthAlert = (n: number, what: string) =>
    waitFor(
      what,
      async () => {
        const hits = receiver.received(path);
        return hits.length >= n ? hits[n - 1] : undefined;
      },
      LIMIT_MS + 30_000,
    );

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    git = await startGitServer();
    await git.createRepo("acme/broken", {
      "package.json": JSON.stringify({
        name: "app",
        version: "1.0.0",
        scripts: { start: "node server.js", build: "echo building; exit 1" },
      }),
      "server.js": 'require("http").createServer((q, s) => s.end("v2")).listen(process.env.PORT);\n',
    });
    stack = await startStack("alerts", {
      vars: { ALLOW_ALERT_LOOPBACK: "true", ALERT_UNHEALTHY_AFTER_S: "10", ALERT_HOST_LOST_AFTER_S: "60" },
    });
    // The same agent, sampling and checking app health every 2 s instead of every minute.
    await stack.agent.stop();
    stack.agentEnv.PODHOST_METRICS_INTERVAL_S = "2";
    await stack.startAgent();
    alice = await signUp(stack.api, "Alice");
    app = `alrt-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [[app, "nodejs"]]);
    const channel = await alice.api.post(`/api/teams/${alice.user.active_team_id}/alerts/channels`, {
      kind: "webhook",
      name: "ops",
      url: `${receiver.url}${path}`,
    });
    expect(channel.status, JSON.stringify(channel.body)).toBe(201);
    secret = channel.body.secret;
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all([git?.close(), receiver?.close()]);
  });

  it("a deploy whose build fails on the agent: deploy_failed arrives signed ≤ 60 s after it failed", async () => {
    const connected = await alice.api.post(`/api/pods/${app}/git`, {
      repo_url: git.url("acme/broken"),
      branch: "main",
    });
    expect(connected.status, JSON.stringify(connected.body)).toBe(201);
    const dep = await alice.api.post(`/api/pods/${app}/git/deploy`);
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    const done = await waitFor(
      "the deploy to fail",
      async () => {
        const d = await alice.api.get(`/api/pods/${app}/git/deployments/${dep.body.id}`);
        return d.body.status === "deploying" ? undefined : d.body;
      },
      180_000,
    );
    expect(done.status, JSON.stringify(done)).toBe("failed");
    const hit = await nthAlert(1, "the deploy_failed alert");
    const alert = verified(hit, secret);
    expect(alert).toMatchObject({ type: "alert.firing", event: "deploy_failed", pod: { name: app } });
    const tookMs = hit.at - Date.parse(done.finished_at);
    console.log(
      `[alerts e2e] deploy_failed reached the webhook ${(tookMs / 1000).toFixed(1)} s after the deploy failed`,
    );
    expect(tookMs).toBeLessThanOrEqual(LIMIT_MS);
  }, 300_000);

  it("an app made to crash-loop: app_unhealthy arrives ≤ 60 s after it broke; fixed, alert.resolved follows", async () => {
    const before = receiver.received(path).length;
    const broke = Date.now();
    const broken = await alice.api.post(`/api/pods/${app}/exec`, { command: ["sh", "-c", CRASHING_APP] });
    expect(broken.body.exit_code, broken.body.stderr).toBe(0);
    const hit = await nthAlert(before + 1, "the app_unhealthy alert");
    const alert = verified(hit, secret);
    expect(alert).toMatchObject({ type: "alert.firing", event: "app_unhealthy", pod: { name: app } });
    const tookMs = hit.at - broke;
    console.log(
      `[alerts e2e] app_unhealthy reached the webhook ${(tookMs / 1000).toFixed(1)} s after the app broke (2 s health checks, 10 s to alert): ${alert.summary}`,
    );
    expect(tookMs).toBeLessThanOrEqual(LIMIT_MS);

    const fixedAt = Date.now();
    const fixed = await alice.api.post(`/api/pods/${app}/exec`, { command: ["sh", "-c", WORKING_APP] });
    expect(fixed.body.exit_code, fixed.body.stderr).toBe(0);
    const resolvedHit = await nthAlert(before + 2, "the resolved alert");
    const resolved = verified(resolvedHit, secret);
    expect(resolved).toMatchObject({ type: "alert.resolved", event: "app_unhealthy" });
    expect(resolved.incident?.id).toBe(alert.incident?.id);
    console.log(
      `[alerts e2e] alert.resolved reached the webhook ${((resolvedHit.at - fixedAt) / 1000).toFixed(1)} s after the app was fixed`,
    );
    expect(resolvedHit.at - fixedAt).toBeLessThanOrEqual(LIMIT_MS);
    // one firing and one resolved for the incident: nothing repeated meanwhile
    expect(
      receiver
        .received(path)
        .slice(before)
        .map((h) => JSON.parse(h.body).type),
    ).toEqual(["alert.firing", "alert.resolved"]);
  }, 300_000);
});
