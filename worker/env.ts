import type { HostAgent } from "./durable-objects/host-agent/object";
import type { RateLimiter } from "./durable-objects/rate-limiter";
import type { TerminalRelay } from "./durable-objects/terminal-relay/object";
import type { TransferRelay } from "./durable-objects/transfer-relay/object";
import type { AlertDeliverParams } from "./workflows/alert-deliver";
import type { MailSendParams } from "./workflows/mail-send";
import type { PodBackupParams } from "./workflows/pod-backup";
import type { PodCodingAgentParams } from "./workflows/pod-coding-agent";
import type { PodCreateParams } from "./workflows/pod-create";
import type { PodDeployParams } from "./workflows/pod-deploy";
import type { PodMoveParams } from "./workflows/pod-move";
import type { PodRestoreParams } from "./workflows/pod-restore";
import type { PodServiceParams } from "./workflows/pod-service";

/** Bindings and configuration of the Worker (wrangler.toml `[vars]`, secrets, D1/R2/DO bindings). */
export interface Bindings {
  DB: D1Database;
  BLOBS: R2Bucket;
  /** the OAuth provider's clients, grants and tokens (connectors; @cloudflare/workers-oauth-provider) */
  OAUTH_KV: KVNamespace;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  HOST_AGENT: DurableObjectNamespace<HostAgent>;
  /** one object per streamed file transfer (durable-objects/transfer-relay/object.ts) */
  TRANSFER_RELAY: DurableObjectNamespace<TransferRelay>;
  /** one object per web terminal session (durable-objects/terminal-relay/object.ts) */
  TERMINAL_RELAY: DurableObjectNamespace<TerminalRelay>;
  /** long operations, one Workflow each (worker/workflows/); instance id = the operation's id */
  POD_CREATE: Workflow<PodCreateParams>;
  /** one instance per git deployment (deploy, push, rollback); instance id = the deployment's id */
  POD_DEPLOY: Workflow<PodDeployParams>;
  /** one instance per backup (manual, scheduled, import); instance id = the backup's id */
  POD_BACKUP: Workflow<PodBackupParams>;
  /** one instance per restore of a pod from a backup; instance id = the restore's id */
  POD_RESTORE: Workflow<PodRestoreParams>;
  /** one instance per database service install; instance id = the service's id */
  POD_SERVICE: Workflow<PodServiceParams>;
  /** one instance per coding agent install; instance id = the install's row id */
  POD_CODING_AGENT: Workflow<PodCodingAgentParams>;
  /** one instance per pod leaving a host (evacuated or recreated after a loss); instance id = the move's id */
  POD_MOVE: Workflow<PodMoveParams>;
  /** one instance per mail sent through the provider, retried with backoff; instance id = the mail's id (docs/mail.md) */
  MAIL_SEND: Workflow<MailSendParams>;
  /** one instance per alert delivery to a channel, retried with backoff; instance id = the delivery's id (docs/alerts.md) */
  ALERT_DELIVER: Workflow<AlertDeliverParams>;
  /** {base_url} of the spec, e.g. https://api.example.com */
  PUBLIC_URL: string;
  /** {pod_domain}: pods answer at {name}.{POD_DOMAIN} */
  POD_DOMAIN: string;
  /** the port pods are served on where it is not the scheme's own (locally the ingress's, e.g. 8080): the dashboard's pod links */
  POD_PUBLIC_PORT?: string;
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  STRIPE_API_BASE?: string;
  /** the git host's REST API (hooks, commit statuses); default https://api.github.com */
  GITHUB_API_BASE?: string;
  /** repositories under this base are "hosted": the service creates their push hook; default https://github.com */
  REPOHOST_GIT_BASE?: string;
  /** secret: 32 bytes, base64; encrypts git access tokens and webhook secrets at rest (AES-GCM) */
  GIT_TOKEN_KEY?: string;
  /** secret: 32 bytes, base64; encrypts database service passwords at rest (AES-GCM) */
  SERVICE_PASSWORD_KEY?: string;
  /** secret: 32 bytes, base64; encrypts invitation tokens at rest for the owner's list (AES-GCM) */
  INVITATION_TOKEN_KEY?: string;
  /** during a rotation (`npm run secrets:rotate`): the previous key of each kind, which only opens */
  GIT_TOKEN_KEY_PREVIOUS?: string;
  SERVICE_PASSWORD_KEY_PREVIOUS?: string;
  INVITATION_TOKEN_KEY_PREVIOUS?: string;
  /** "true": plain http:// repository URLs are accepted for loopback hosts (local development, tests) */
  ALLOW_HTTP_GIT_LOOPBACK?: string;
  DNS_RESOLVER_URL?: string;
  /** Cloudflare's API for custom domains' certificates (Cloudflare for SaaS); default https://api.cloudflare.com/client/v4 (docs/domains.md) */
  CLOUDFLARE_API_BASE?: string;
  /** the zone whose custom hostnames carry verified custom domains; unset: `tls_status: "not_configured"` */
  CLOUDFLARE_ZONE_ID?: string;
  /** secret: an API token with "SSL and Certificates: Edit" on that zone; unset: `tls_status: "not_configured"` */
  CLOUDFLARE_API_TOKEN?: string;
  /** "true": URL imports may fetch 127.0.0.0/8 (local development, tests); every other private address stays refused */
  ALLOW_IMPORT_LOOPBACK?: string;
  /** secret: the mail provider's API key (Resend); unset, mail stays in the outbox (docs/mail.md) */
  MAIL_API_KEY?: string;
  /** "true": alert webhooks may be sent to 127.0.0.0/8 (local development, tests); every other private address stays refused */
  ALLOW_ALERT_LOOPBACK?: string;
  /** seconds an app stays diagnosed unhealthy (crash loop, not answering) before `app_unhealthy` alerts; default 300 (docs/alerts.md) */
  ALERT_UNHEALTHY_AFTER_S?: string;
  /** seconds a host's agent stays disconnected before `host_lost` alerts its pods' teams; default 60 (docs/alerts.md) */
  ALERT_HOST_LOST_AFTER_S?: string;
  /** the provider's API base; default https://api.resend.com (tests point it at a local double) */
  MAIL_API_BASE?: string;
  /** the sender, e.g. `podhost <noreply@example.com>`; default noreply@ the host of PUBLIC_URL */
  MAIL_FROM?: string;
}

/** The Workflow bindings: a host outcome is delivered to an instance of one of these by name. */
export type WorkflowBinding =
  | "POD_CREATE"
  | "POD_DEPLOY"
  | "POD_SERVICE"
  | "POD_BACKUP"
  | "POD_RESTORE"
  | "POD_CODING_AGENT"
  | "POD_MOVE";
