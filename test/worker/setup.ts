import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Idempotent: applies only what is missing, so every test file can run it.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
