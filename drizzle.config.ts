import { defineConfig } from "drizzle-kit";

// drizzle-kit writes SQL migrations; wrangler applies them (`npm run db:migrate`, tests, npm start).
export default defineConfig({
  dialect: "sqlite",
  schema: "./worker/db/schema/index.ts",
  out: "./migrations",
});
