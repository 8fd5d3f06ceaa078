import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig, type Plugin } from "vitest/config";

/**
 * wrangler.toml's Text rule for the dashboard's own browser files (worker/dashboard/assets/), in
 * the test runner: the pool applies wrangler's module rules only to files it externalizes (those in
 * node_modules), and Vite would run our browser script in workerd or treat the stylesheet as CSS.
 * Both become the string module wrangler makes of them.
 */
const TEXT_PREFIX = "\0podhost-text:";
const dashboardAssetsAsText = (): Plugin => ({
  name: "podhost-dashboard-assets-as-text",
  enforce: "pre",
  resolveId(source, importer) {
    if (!importer || !/\.(js|css)$/.test(source)) return null;
    const file = resolve(importer, "..", source);
    return /\/worker\/dashboard\/assets\/[^/]+$/.test(file) ? `${TEXT_PREFIX}${file}.mjs` : null;
  },
  async load(id) {
    if (!id.startsWith(TEXT_PREFIX)) return null;
    const file = id.slice(TEXT_PREFIX.length, -".mjs".length);
    return `export default ${JSON.stringify(await readFile(file, "utf8"))};`;
  },
});

export default defineConfig({
  test: {
    // Request log lines are noise when tests pass; they are shown for failing tests.
    silent: "passed-only",
    projects: [
      {
        // The Worker inside workerd with real local D1, R2 and Durable Objects.
        plugins: [
          dashboardAssetsAsText(),
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
                // Git deployments: the git host's REST double (test/worker/global-setup.ts), a fixed
                // test key for the secrets at rest, and http:// repositories on loopback allowed.
                GITHUB_API_BASE: process.env.REPOHOST_DOUBLE_URL ?? "http://127.0.0.1:9",
                GIT_TOKEN_KEY: "dGVzdC1vbmx5LWdpdC10b2tlbi1rZXktMzItYnl0ZXM=",
                // database service passwords at rest (a test key of its own)
                SERVICE_PASSWORD_KEY: "dGVzdC1vbmx5LXNlcnZpY2UtcGFzc3dvcmQta2V5ISE=",
                // invitation tokens kept sealed for the owner's list (a test key of its own)
                INVITATION_TOKEN_KEY: "dGVzdC1vbmx5LWludml0YXRpb24tdG9rZW4ta2V5ISE=",
                ALLOW_HTTP_GIT_LOOPBACK: "true",
                // Imports: URL imports may fetch the local doubles on 127.0.0.1 (every other private address stays refused).
                ALLOW_IMPORT_LOOPBACK: "true",
                IMPORT_SITE_URL: process.env.IMPORT_SITE_DOUBLE_URL ?? "http://127.0.0.1:9",
                // Billing: Stripe's REST double (test/worker/global-setup.ts). No STRIPE_SECRET_KEY
                // here: enforcement stays off for every test; billing tests pass a key per request.
                STRIPE_API_BASE: process.env.STRIPE_DOUBLE_URL ?? "http://127.0.0.1:9",
                // Custom domains: the DNS-over-HTTPS double (test/worker/global-setup.ts) verifies them.
                DNS_RESOLVER_URL: process.env.DNS_DOUBLE_URL ?? "http://127.0.0.1:9/dns-query",
                // Custom domains' certificates: Cloudflare for SaaS's custom hostnames double (test/worker/global-setup.ts).
                CLOUDFLARE_API_BASE: process.env.CLOUDFLARE_DOUBLE_URL ?? "http://127.0.0.1:9",
                CLOUDFLARE_ZONE_ID: "023e105f4ecef8ad9ca31a8372d0c353",
                CLOUDFLARE_API_TOKEN: "cf-double-test-token",
                // Mail: every mail goes through Resend's double (test/worker/global-setup.ts) by the
                // mail-send Workflow, and is recorded in mail_outbox as in production.
                MAIL_API_BASE: process.env.MAIL_API_DOUBLE_URL ?? "http://127.0.0.1:9",
                MAIL_API_KEY: "re_double_test_key",
                MAIL_FROM: "podhost <noreply@podhost.test>",
                // Alerts: webhooks may reach the receiver double on 127.0.0.1 (every other private address stays refused).
                ALLOW_ALERT_LOOPBACK: "true",
                WEBHOOK_RECEIVER_URL: process.env.WEBHOOK_RECEIVER_URL ?? "http://127.0.0.1:9",
                // app_unhealthy and host_lost wait a second here (5 min and 60 s in production)
                ALERT_UNHEALTHY_AFTER_S: "1",
                ALERT_HOST_LOST_AFTER_S: "1",
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          // Two Worker files run at once on CI's two cores (Vitest runs the projects one after the
          // other, and its default, cores - 1, would run one file at a time): a route sweep (every
          // pod route, hundreds of requests) or a deploy's workflow takes several seconds there.
          testTimeout: 30_000,
          maxWorkers: 2,
          setupFiles: ["./test/worker/setup.ts"],
          globalSetup: ["./test/worker/global-setup.ts"],
        },
      },
      {
        // The agent against the real Docker engine, end-to-end runs of Worker + agent + Docker, and
        // the layout check (it reads the file system, which workerd cannot).
        test: {
          name: "node",
          include: [
            "test/agent/**/*.test.ts",
            "test/e2e/**/*.test.ts",
            // the fault-injection suite's fast subset; all of it: `npm run chaos` (vitest.chaos.config.ts)
            "test/chaos/**/*.fast.test.ts",
            "test/scripts/**/*.test.ts",
            "test/layout.test.ts",
          ],
          environment: "node",
          // the agent's bundle (dist/agent/main.js), which e2e tests start as production does
          globalSetup: ["./test/support/build-agent.global.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          // One Docker engine, two cores: files run one after another.
          fileParallelism: false,
        },
      },
    ],
  },
});
