import type { HostAgent } from "./durable-objects/host-agent/object";
import type { RateLimiter } from "./durable-objects/rate-limiter";
import type { TransferRelay } from "./durable-objects/transfer-relay/object";
import type { PodCreateParams } from "./workflows/pod-create";

/** Bindings and configuration of the Worker (wrangler.toml `[vars]`, secrets, D1/R2/DO bindings). */
export interface Bindings {
  DB: D1Database;
  BLOBS: R2Bucket;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  HOST_AGENT: DurableObjectNamespace<HostAgent>;
  /** one object per streamed file transfer (durable-objects/transfer-relay/object.ts) */
  TRANSFER_RELAY: DurableObjectNamespace<TransferRelay>;
  /** long operations, one Workflow each (worker/workflows/); instance id = the operation's id */
  POD_CREATE: Workflow<PodCreateParams>;
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

/** The Workflow bindings: a host outcome is delivered to an instance of one of these by name. */
export type WorkflowBinding = "POD_CREATE";
