import { createApp } from "./app";

export { RateLimiter } from "./durable-objects/rate-limiter";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<import("./env").Bindings>;
