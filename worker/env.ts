import type { HostAgent } from "./durable-objects/host-agent";
import type { RateLimiter } from "./durable-objects/rate-limiter";
import type { TransferRelay } from "./durable-objects/transfer-relay";

/** Bindings and configuration of the Worker (wrangler.toml `[vars]`, secrets, D1/R2/DO bindings). */
export interface Bindings {
  DB: D1Database;
  BLOBS: R2Bucket;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  HOST_AGENT: DurableObjectNamespace<HostAgent>;
  /** one object per streamed file transfer (durable-objects/transfer-relay.ts) */
  TRANSFER_RELAY: DurableObjectNamespace<TransferRelay>;
  /** {base_url} of the spec, e.g. https://api.example.com */
  PUBLIC_URL: string;
  /** {pod_domain}: pods answer at {name}.{POD_DOMAIN} */
  POD_DOMAIN: string;
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  STRIPE_API_BASE?: string;
  GITHUB_API_BASE?: string;
  DNS_RESOLVER_URL?: string;
}
