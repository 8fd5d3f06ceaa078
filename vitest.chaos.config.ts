import { defineConfig } from "vitest/config";

/**
 * `npm run chaos`: the whole fault-injection suite (test/chaos/, docs/reliability.md): agents
 * SIGKILLed, the Worker restarted and the Docker engine restarted mid-operation. Its fast files
 * (`*.fast.test.ts`) also run in `npm test`; the rest only here, as they take long or, like the
 * engine's restart, touch every container on the machine.
 */
export default defineConfig({
  test: {
    name: "chaos",
    include: ["test/chaos/**/*.test.ts"],
    environment: "node",
    silent: "passed-only",
    globalSetup: ["./test/support/build-agent.global.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // one Docker engine, two cores: one file at a time
    fileParallelism: false,
  },
});
