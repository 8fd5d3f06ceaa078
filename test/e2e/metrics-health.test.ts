import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

// A dependency npm installs offline (the pods reach no registry): a local `file:` package.
const BROKEN_APP = `set -e
cd ~/app
rm -rf node_modules package-lock.json
mkdir -p greet
printf '%s' '{"name":"greet","version":"1.0.0","main":"index.js"}' > greet/package.json
printf '%s' 'module.exports = () => "hello from greet";' > greet/index.js
printf '%s' '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"},"dependencies":{"greet":"file:./greet"}}' > package.json
printf 'fetch-retries=0\\n' > .npmrc
printf '%s' 'const greet = require("greet"); require("http").createServer((q, s) => s.end(greet())).listen(process.env.PORT);' > server.js
# The app now crashes at start: sv may time out waiting for it to stay up (exit 1) on a busy host.
sv restart app || true`;

describe("metrics and app health through the API (agent sampling every 2 s)", () => {
  let stack: Stack;
  let alice: User;
  let bob: User;
  let app: string;

  beforeAll(async () => {
    stack = await startStack("metrics");
    // The same agent, sampling every 2 s instead of every minute.
    await stack.agent.stop();
    stack.agentEnv.PODHOST_METRICS_INTERVAL_S = "2";
    await stack.startAgent();
    alice = await signUp(stack.api, "Alice");
    bob = await signUp(stack.api, "Bob");
    app = `app-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(alice.api);
    await createRunningPods(alice.api, [[app, "nodejs"]]);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("shows the pod's metrics: the newest sample and the history, oldest first", async () => {
    const latest = await waitFor(
      "a metrics sample",
      async () => {
        const res = await alice.api.get(`/api/pods/${app}/metrics`);
        return res.status === 200 && res.body ? res.body : undefined;
      },
      60_000,
    );
    expect(Object.keys(latest).sort()).toEqual(
      ["cpu_usage", "memory_usage", "network_in", "network_out", "recorded_at", "storage_used"].sort(),
    );
    expect(latest.cpu_usage).toBeGreaterThanOrEqual(0);
    expect(latest.cpu_usage).toBeLessThanOrEqual(100);
    // A Node.js app and runit use a few percent of the launch plan's 512 MB.
    expect(latest.memory_usage).toBeGreaterThan(0);
    expect(latest.memory_usage).toBeLessThan(100);
    expect(latest.storage_used).toBeGreaterThan(0);
    expect(latest.network_in).toBeGreaterThanOrEqual(0);
    expect(Date.now() - Date.parse(latest.recorded_at)).toBeLessThan(120_000);

    const history = await waitFor(
      "a few samples",
      async () => {
        const res = await alice.api.get(`/api/pods/${app}/metrics/history?hours=1`);
        return res.status === 200 && res.body.length >= 3
          ? (res.body as { recorded_at: string }[])
          : undefined;
      },
      60_000,
    );
    const times = history.map((m) => m.recorded_at);
    expect([...times].sort()).toEqual(times);

    expect((await alice.api.get(`/api/pods/${app}/metrics/history?hours=721`)).status).toBe(400);
    expect((await bob.api.get(`/api/pods/${app}/metrics`)).status).toBe(404);
    expect((await bob.api.get(`/api/pods/${app}/metrics/history`)).status).toBe(404);
  });

  it("diagnoses a broken app on the Pod, and POST /diagnosis/fix repairs it", {
    timeout: 240_000,
  }, async () => {
    expect((await alice.api.post(`/api/pods/${app}/diagnosis/fix`)).status).toBe(400);
    const broken = await alice.api.post(`/api/pods/${app}/exec`, { command: ["sh", "-c", BROKEN_APP] });
    expect(broken.body.exit_code, broken.body.stderr).toBe(0);

    const diagnosis = await waitFor(
      "a diagnosis on the pod",
      async () => {
        const res = await alice.api.get(`/api/pods/${app}`);
        return res.body.app_health_diagnosis ? JSON.parse(res.body.app_health_diagnosis) : undefined;
      },
      120_000,
    );
    expect(diagnosis).toMatchObject({
      class: "missing_module",
      auto_fixable: true,
      fix_action: "install_dependencies",
    });
    expect(diagnosis.title).toContain("greet");
    const events = await alice.api.get(`/api/pods/${app}/events?type=health_diagnosis`);
    expect(events.body.events).toHaveLength(1);
    expect((await bob.api.post(`/api/pods/${app}/diagnosis/fix`)).status).toBe(404);

    const fixed = await alice.api.post(`/api/pods/${app}/diagnosis/fix`);
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    expect(fixed.body).toEqual({ status: "fixed", action: "install_dependencies" });

    const page = await waitFor(
      "the app to answer through the ingress",
      async () => {
        const res = await httpGet(stack.edgePort, `${app}.pods.localhost`).catch(() => undefined);
        return res?.status === 200 ? res.body : undefined;
      },
      30_000,
    );
    expect(page).toBe("hello from greet");
    // Healthy: nothing is diagnosed again on the next checks, and there is nothing left to fix.
    await new Promise((r) => setTimeout(r, 6_000));
    expect((await alice.api.get(`/api/pods/${app}`)).body).not.toHaveProperty("app_health_diagnosis");
    expect((await alice.api.post(`/api/pods/${app}/diagnosis/fix`)).status).toBe(400);
    const fixedEvents = await alice.api.get(`/api/pods/${app}/events?type=health_fixed`);
    expect(fixedEvents.body.events).toHaveLength(1);
  });
});
