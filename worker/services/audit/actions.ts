/**
 * What the audit log records (docs/audit.md), in one place: the typed list of actions, which REST
 * operation is which action and what it names (`ROUTE_ACTIONS`, read by the audit-trail middleware,
 * worker/http/audit-trail.ts), and which MCP tool is which (`TOOL_ACTIONS`, read by the tools'
 * dispatch). A test walks /openapi.json and fails for any POST, PUT, PATCH or DELETE operation that
 * is neither here nor in `UNAUDITED_ROUTES`, so a new route cannot change things unrecorded.
 */

export const AUDIT_ACTIONS = [
  "auth.logout",
  "auth.resend_verification",
  "team.create",
  "team.switch",
  "team.rename",
  "team.delete",
  "member.add",
  "member.remove",
  "invitation.create",
  "invitation.delete",
  "invitation.accept",
  "alert_channel.create",
  "alert_channel.update",
  "alert_channel.delete",
  "alert_channel.test",
  "alert_event.set",
  "api_token.create",
  "api_token.revoke",
  "connector.grant",
  "connector.revoke",
  "pod.create",
  "pod.create_from_zip",
  "pod.create_from_repo",
  "pod.delete",
  "pod.start",
  "pod.stop",
  "pod.restart",
  "pod.resize",
  "pod.clone",
  "pod.reload",
  "pod.node_version",
  "pod.diagnosis_fix",
  "pod_ssh_key.add",
  "pod_ssh_key.remove",
  "exec.run",
  "env.set",
  "env.unset",
  "zip.upload",
  "file.write",
  "file.upload",
  "file.delete",
  "file.rename",
  "file.copy",
  "folder.create",
  "service.install",
  "service.remove",
  "domain.add",
  "domain.remove",
  "domain.verify",
  "feedback.settings",
  "feedback.update",
  "feedback.delete",
  "git.connect",
  "git.update",
  "git.disconnect",
  "deploy.run",
  "deploy.rollback",
  "agent.install",
  "agent.remove",
  "backup.create",
  "backup.schedule",
  "backup.import",
  "backup.delete",
  "backup.restore",
  "billing.subscribe",
  "billing.plan_change",
  "billing.cancel",
  "billing.resume",
  "billing.invoice_pay",
  "billing.payment_method_add",
  "billing.payment_method_default",
  "billing.payment_method_delete",
  "billing.setup_intent",
  "billing.setup_session",
  "affiliate.enroll",
  "affiliate.settings",
  "import.create",
  "ssh_key.create",
  "ssh_key.update",
  "ssh_key.delete",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What a record's extractors may read of the request that made the change. */
export interface AuditFacts {
  param(name: string): string | undefined;
  /** the validated JSON body (undefined when it did not validate, or the route takes none) */
  body: Record<string, unknown> | undefined;
  /** the validated query */
  query: Record<string, unknown> | undefined;
  /** the JSON answer, read only for entries with `readsResponse` (and only on success) */
  response: Record<string, unknown> | undefined;
}

type Extract = (f: AuditFacts) => unknown;

export interface RouteAudit {
  action: AuditAction;
  /** what the change was on besides the pod: an id, a name, a path */
  target?: Extract;
  /** bounded facts kept as JSON (argv, key names); never values, contents or output */
  detail?: (f: AuditFacts) => Record<string, unknown> | undefined;
  /** the pod's name; by default the path's `{name}` */
  pod?: Extract;
  /** whose log it goes into: by default the caller's team; `param` is the path's `{id}` (team routes) */
  team?: "param" | Extract;
  readsResponse?: boolean;
}

const param =
  (name: string): Extract =>
  (f) =>
    f.param(name);
const field =
  (name: string): Extract =>
  (f) =>
    f.body?.[name];
const queryField =
  (name: string): Extract =>
  (f) =>
    f.query?.[name];
const answered =
  (...path: string[]): Extract =>
  (f) =>
    path.reduce<unknown>(
      (v, k) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined),
      f.response,
    );
const keysOf = (v: unknown) => (v !== null && typeof v === "object" ? Object.keys(v) : undefined);

const onTeam = (action: AuditAction, target?: Extract): RouteAudit => ({ action, team: "param", target });

/**
 * Every change the REST API makes, by `METHOD /documented/path` (the OpenAPI document's spelling).
 * The pod routes name their pod by the path's `{name}`.
 */
export const ROUTE_ACTIONS: Record<string, RouteAudit> = {
  "POST /api/auth/logout": { action: "auth.logout" },
  "POST /api/auth/resend-verification": { action: "auth.resend_verification" },
  "POST /api/teams": {
    action: "team.create",
    team: answered("id"),
    target: field("name"),
    readsResponse: true,
  },
  "POST /api/teams/switch": { action: "team.switch", target: field("team_id") },
  "PUT /api/teams/{id}": onTeam("team.rename", field("name")),
  "DELETE /api/teams/{id}": onTeam("team.delete"),
  "POST /api/teams/{id}/members": onTeam("member.add", field("email")),
  "DELETE /api/teams/{id}/members/{uid}": onTeam("member.remove", param("uid")),
  "POST /api/teams/{id}/invitations": onTeam("invitation.create", field("email")),
  "DELETE /api/teams/{id}/invitations/{invId}": onTeam("invitation.delete", param("invId")),
  "POST /api/teams/{id}/alerts/channels": onTeam("alert_channel.create", field("name")),
  "PATCH /api/teams/{id}/alerts/channels/{channelId}": onTeam("alert_channel.update", param("channelId")),
  "DELETE /api/teams/{id}/alerts/channels/{channelId}": onTeam("alert_channel.delete", param("channelId")),
  "POST /api/teams/{id}/alerts/channels/{channelId}/test": onTeam("alert_channel.test", param("channelId")),
  "PUT /api/teams/{id}/alerts/events": {
    ...onTeam("alert_event.set", field("event")),
    pod: field("pod"),
    detail: (f) => ({ enabled: f.body?.enabled }),
  },
  "POST /api/invitations/accept": {
    action: "invitation.accept",
    team: answered("team_id"),
    readsResponse: true,
  },
  "POST /api/api-tokens": { action: "api_token.create", target: field("name") },
  "DELETE /api/api-tokens/{id}": { action: "api_token.revoke", target: param("id") },
  "DELETE /api/connectors/{id}": { action: "connector.revoke", target: param("id") },
  "POST /api/pods": {
    action: "pod.create",
    pod: field("name"),
    detail: (f) => ({ plan: f.body?.plan_slug }),
  },
  "POST /api/pods/from-zip": { action: "pod.create_from_zip", pod: answered("name"), readsResponse: true },
  "POST /api/pods/from-repo": {
    action: "pod.create_from_repo",
    pod: answered("pod", "name"),
    target: field("repo_url"),
    readsResponse: true,
  },
  "DELETE /api/pods/{name}": { action: "pod.delete" },
  "POST /api/pods/{name}/start": { action: "pod.start" },
  "POST /api/pods/{name}/stop": { action: "pod.stop" },
  "POST /api/pods/{name}/restart": { action: "pod.restart" },
  "POST /api/pods/{name}/resize": { action: "pod.resize", target: field("plan_slug") },
  "POST /api/pods/{name}/clone": { action: "pod.clone", target: field("new_name") },
  "POST /api/pods/{name}/reload": { action: "pod.reload" },
  "PUT /api/pods/{name}/node-version": { action: "pod.node_version", target: field("version") },
  "POST /api/pods/{name}/diagnosis/fix": { action: "pod.diagnosis_fix" },
  "POST /api/pods/{name}/ssh/keys": { action: "pod_ssh_key.add" },
  "DELETE /api/pods/{name}/ssh/keys": { action: "pod_ssh_key.remove" },
  "POST /api/pods/{name}/exec": { action: "exec.run", detail: (f) => ({ argv: f.body?.command }) },
  "PUT /api/pods/{name}/env": { action: "env.set", detail: (f) => ({ keys: keysOf(f.body?.vars) }) },
  "DELETE /api/pods/{name}/env": { action: "env.unset", detail: (f) => ({ keys: f.body?.keys }) },
  "POST /api/pods/{name}/zip": { action: "zip.upload" },
  "DELETE /api/pods/{name}/files": { action: "file.delete", target: queryField("path") },
  "PUT /api/pods/{name}/files/content": { action: "file.write", target: field("path") },
  "POST /api/pods/{name}/files/upload": {
    action: "file.upload",
    target: answered("path"),
    readsResponse: true,
  },
  "POST /api/pods/{name}/files/rename": {
    action: "file.rename",
    target: field("old_path"),
    detail: (f) => ({ to: f.body?.new_path }),
  },
  "POST /api/pods/{name}/files/copy": {
    action: "file.copy",
    target: field("source_path"),
    detail: (f) => ({ to: f.body?.dest_path }),
  },
  "POST /api/pods/{name}/folders": { action: "folder.create", target: field("path") },
  "POST /api/pods/{name}/services": { action: "service.install", target: field("service_type") },
  "DELETE /api/pods/{name}/services/{serviceType}": {
    action: "service.remove",
    target: param("serviceType"),
  },
  "POST /api/pods/{name}/domains": { action: "domain.add", target: field("domain") },
  "DELETE /api/pods/{name}/domains/{id}": { action: "domain.remove", target: param("id") },
  "POST /api/pods/{name}/domains/{id}/verify": { action: "domain.verify", target: param("id") },
  "POST /api/pods/{name}/feedback/settings": { action: "feedback.settings" },
  "PATCH /api/pods/{name}/feedback/{id}": { action: "feedback.update", target: param("id") },
  "DELETE /api/pods/{name}/feedback/{id}": { action: "feedback.delete", target: param("id") },
  "POST /api/pods/{name}/git": { action: "git.connect", target: field("repo_url") },
  "PUT /api/pods/{name}/git": { action: "git.update" },
  "DELETE /api/pods/{name}/git": { action: "git.disconnect" },
  "POST /api/pods/{name}/git/deploy": { action: "deploy.run" },
  "POST /api/pods/{name}/git/rollback": { action: "deploy.rollback", target: field("deployment_id") },
  "POST /api/pods/{name}/agents": { action: "agent.install", target: field("agent") },
  "DELETE /api/pods/{name}/agents/{slug}": { action: "agent.remove", target: param("slug") },
  "POST /api/pods/{name}/backups": { action: "backup.create" },
  "PUT /api/pods/{name}/backups/schedule": { action: "backup.schedule" },
  "POST /api/pods/{name}/backups/import": { action: "backup.import" },
  "DELETE /api/pods/{name}/backups/{id}": { action: "backup.delete", target: param("id") },
  "POST /api/pods/{name}/backups/{id}/restore": { action: "backup.restore", target: param("id") },
  "POST /api/billing/subscribe": { action: "billing.subscribe" },
  "PUT /api/billing/subscription/plan": { action: "billing.plan_change" },
  "POST /api/billing/subscription/cancel": { action: "billing.cancel" },
  "POST /api/billing/subscription/resume": { action: "billing.resume" },
  "POST /api/billing/invoices/{invoiceId}/pay": { action: "billing.invoice_pay", target: param("invoiceId") },
  "POST /api/billing/payment-methods": { action: "billing.payment_method_add" },
  "POST /api/billing/payment-methods/default": { action: "billing.payment_method_default" },
  "DELETE /api/billing/payment-methods/{pmId}": {
    action: "billing.payment_method_delete",
    target: param("pmId"),
  },
  "POST /api/billing/setup-intent": { action: "billing.setup_intent" },
  "POST /api/billing/setup-session": { action: "billing.setup_session" },
  "POST /api/billing/setup-session/{id}/complete": { action: "billing.setup_session", target: param("id") },
  "POST /api/affiliates/enroll": { action: "affiliate.enroll" },
  "PUT /api/affiliates/settings": { action: "affiliate.settings" },
  "POST /api/imports": { action: "import.create", target: field("url") },
  "POST /api/ssh-keys": { action: "ssh_key.create", target: field("name") },
  "PUT /api/ssh-keys/{id}": { action: "ssh_key.update", target: param("id") },
  "DELETE /api/ssh-keys/{id}": { action: "ssh_key.delete", target: param("id") },
};

/**
 * Changes with no signed-in actor, so no one to record and no team to record it for: sign-up and
 * sign-in, password and e-mail links, the public feedback form, webhooks from git hosts and Stripe
 * (their effects — a deploy, a payment — show in the pod's events and the billing history), a
 * referral link's click.
 */
export const UNAUDITED_ROUTES: Record<string, string> = {
  "POST /api/auth/register": "no account yet",
  "POST /api/auth/login": "no account yet",
  "POST /api/auth/forgot-password": "signed out",
  "POST /api/auth/reset-password": "signed out, by a mailed link",
  "POST /api/auth/verify-email": "signed out, by a mailed link",
  "POST /api/feedback/{token}": "a pod's visitors, not the team",
  "POST /api/webhooks/repohost": "a git host's push",
  "POST /api/webhooks/git/{podName}": "a git host's push",
  "POST /api/webhooks/stripe": "Stripe's event",
  "POST /api/affiliate/visit": "an anonymous click",
};

/** The MCP tools that change something; read-only tools are not recorded (as GET routes are not). */
export const TOOL_ACTIONS: Record<string, RouteAudit> = {
  create_pod: { action: "pod.create", pod: field("name") },
  start_pod: { action: "pod.start" },
  stop_pod: { action: "pod.stop" },
  restart_pod: { action: "pod.restart" },
  delete_pod: { action: "pod.delete" },
  write_file: { action: "file.write", target: field("path") },
  run_command: { action: "exec.run", detail: (f) => ({ argv: f.body?.command }) },
  set_env: { action: "env.set", detail: (f) => ({ keys: keysOf(f.body?.vars) }) },
  unset_env: { action: "env.unset", detail: (f) => ({ keys: f.body?.keys }) },
  connect_git: { action: "git.connect", target: field("repo_url") },
  deploy_git: { action: "deploy.run" },
  create_backup: { action: "backup.create" },
  restore_backup: { action: "backup.restore", target: field("id") },
  install_service: { action: "service.install", target: field("service_type") },
  add_domain: { action: "domain.add", target: field("domain") },
  verify_domain: { action: "domain.verify", target: field("id") },
};
