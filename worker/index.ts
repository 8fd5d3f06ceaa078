import { createApp } from "./app";

export { HostAgent } from "./durable-objects/host-agent";
export { RateLimiter } from "./durable-objects/rate-limiter";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<import("./env").Bindings>;
