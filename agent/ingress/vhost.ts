import { isIPv4 } from "node:net";
import { type FeedbackVhost, isFeedbackToken, isWidgetScriptUrl } from "../../shared/protocol/feedback";

/**
 * nginx text rendered from values that come over the wire: everything interpolated is validated
 * first, so a hostile domain cannot smuggle directives into the host's config.
 */

const HOSTNAME =
  /^(?=.{1,253}$)(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function validDomain(domain: string): boolean {
  return HOSTNAME.test(domain);
}

/**
 * The port of a pod's standby upstream: the ingress passes a request there only when the pod's own
 * port refuses it (`backup`). Nothing listens there normally; during a git deploy the new release
 * answers on it from the build container (which shares the pod's network namespace) while the pod's
 * app restarts on that release, so the switch needs no reload and no request meets a restarting
 * server (docs/git.md "Zero downtime"). Below the kernel's ephemeral range, away from the usual
 * development ports.
 */
export const STANDBY_PORT = 29999;

export interface VhostSpec {
  pod: string;
  podId: string;
  domains: string[];
  ip: string;
  port: number;
  /** the visitor feedback widget (docs/feedback.md); absent or disabled: nothing is injected */
  feedback?: FeedbackVhost;
  /**
   * During a git deploy: the standby port first, the pod's own as the backup, so the new release
   * takes every request from the moment it listens (docs/git.md "Zero downtime")
   */
  standbyFirst?: boolean;
}

/** the cookie that keeps the widget on later pages of a visitor who opened the share link */
export const FEEDBACK_COOKIE = "pod_feedback";
const FEEDBACK_COOKIE_MAX_AGE_S = 30 * 24 * 3600;

/**
 * The widget's injection (docs/feedback.md): every HTML page the pod serves gets the script before
 * its `</body>` (sub_filter; upstream gzip would hide the markup from it, so the vhost asks for
 * identity encoding). `everyone`: for every visitor. `link`: only for a request whose
 * `pod_feedback` query argument or cookie is the current token; the argument also sets the cookie,
 * so that visitor's later pages keep the widget, and a rotated token matches neither.
 * Server-level `if` holds only `set` (safe in nginx); both values were checked before.
 */
function feedbackDirectives(pod: string, f: FeedbackVhost | undefined): { server: string; location: string } {
  if (!f?.enabled) return { server: "", location: "" };
  if (!isFeedbackToken(f.token)) throw new Error(`vhost ${pod}: invalid feedback token`);
  if (!isWidgetScriptUrl(f.scriptUrl)) throw new Error(`vhost ${pod}: invalid widget script URL`);
  const script = `<script src="${f.scriptUrl}" data-pod-feedback="${f.token}" async></script>`;
  const location = `    proxy_set_header Accept-Encoding "";
    sub_filter_once on;
    sub_filter_types text/html;
`;
  if (f.visibility === "everyone")
    return {
      server: "",
      location: `${location}    sub_filter '</body>' '${script}</body>';
`,
    };
  const cookie = `${FEEDBACK_COOKIE}=${f.token}; Path=/; Max-Age=${FEEDBACK_COOKIE_MAX_AGE_S}; HttpOnly; SameSite=Lax`;
  return {
    server: `  # feedback widget, visibility link: only with the current token (argument or cookie)
  set $podhost_feedback_script "";
  set $podhost_feedback_cookie "";
  if ($cookie_${FEEDBACK_COOKIE} = "${f.token}") { set $podhost_feedback_script '${script}'; }
  if ($arg_${FEEDBACK_COOKIE} = "${f.token}") {
    set $podhost_feedback_script '${script}';
    set $podhost_feedback_cookie "${cookie}";
  }
`,
    location: `${location}    sub_filter '</body>' '$podhost_feedback_script</body>';
    # an empty value adds no header
    add_header Set-Cookie $podhost_feedback_cookie;
`,
  };
}

export function renderVhost(listen: string, v: VhostSpec): string {
  const bad = v.domains.find((d) => !validDomain(d));
  if (bad !== undefined || v.domains.length === 0)
    throw new Error(`vhost ${v.pod}: invalid domain ${JSON.stringify(bad)}`);
  if (!isIPv4(v.ip)) throw new Error(`vhost ${v.pod}: invalid upstream address ${JSON.stringify(v.ip)}`);
  if (!Number.isInteger(v.port) || v.port < 1 || v.port > 65535)
    throw new Error(`vhost ${v.pod}: invalid port`);
  if (!/^[A-Za-z0-9_-]+$/.test(v.podId)) throw new Error(`vhost ${v.pod}: invalid pod id`);
  const feedback = feedbackDirectives(v.pod, v.feedback);
  // max_fails=0: a refused connection never marks the pod's port as down, so every request tries
  // it first (with the default, one refusal would send the next 10 s of requests to the standby)
  return `# pod ${v.pod} (${v.podId}), rendered by podhost-agent: edits are overwritten
upstream podhost_${v.podId} {
  server ${v.ip}:${v.standbyFirst ? STANDBY_PORT : v.port} max_fails=0;
  server ${v.ip}:${v.standbyFirst ? v.port : STANDBY_PORT} max_fails=0 backup;
}
server {
  listen ${listen};
  server_name ${v.domains.join(" ")};
  client_max_body_size 64m;
${feedback.server}  location / {
    proxy_pass http://podhost_${v.podId};
    proxy_http_version 1.1;
    proxy_set_header Host $host;
    # the visitor's address and scheme as the edge signed them (the front server let nothing else in)
    proxy_set_header X-Real-IP $http_x_podhost_client_ip;
    proxy_set_header X-Forwarded-For $http_x_podhost_client_ip;
    proxy_set_header CF-Connecting-IP $http_x_podhost_client_ip;
    proxy_set_header X-Forwarded-Proto $http_x_forwarded_proto;
    proxy_set_header X-Forwarded-Host $host;
    proxy_set_header X-Podhost-Client-Ip "";
    proxy_set_header Upgrade $http_upgrade;
    proxy_set_header Connection $podhost_connection_upgrade;
    # only a refused or broken connection tries the standby; a slow app still answers 504
    proxy_next_upstream error;
    proxy_connect_timeout 5s;
    proxy_read_timeout 300s;
    proxy_send_timeout 300s;
    # the app not answering: marked, so the edge answers its own page instead of nginx's
    error_page 502 504 = @podhost_unavailable;
${feedback.location}  }
  location @podhost_unavailable {
    add_header X-Podhost-Ingress unavailable always;
    return 502;
  }
}
`;
}

export interface MainConfigSpec {
  /** absolute, = nginx's -p prefix */
  dir: string;
  listen: string;
  /** the pods' vhosts listen on this unix socket (absolute path), reached only through the front server */
  podsSocket: string;
  /** the edge's secret for this host (shared/edge-proof.ts): lowercase hex */
  edgeSecret: string;
  /** `user` directive when the master runs as root */
  user?: { name: string; group: string };
}

/** The ingress's own nginx.conf: nothing from the system nginx is used (no /etc/nginx/sites-enabled). */
export function renderMainConfig(c: MainConfigSpec): string {
  if (!/^[0-9a-f]{64}$/.test(c.edgeSecret)) throw new Error("ingress: the edge secret must be 64 hex digits");
  if (!/^\/[A-Za-z0-9._/-]+$/.test(c.podsSocket)) throw new Error("ingress: invalid pods socket path");
  return `# podhost-agent ingress, rewritten at every agent start.
${c.user ? `user ${c.user.name} ${c.user.group};\n` : ""}worker_processes auto;
pid ${c.dir}/nginx.pid;
# old workers holding websockets finish within this after a reload
worker_shutdown_timeout 60s;
error_log ${c.dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format podhost '$remote_addr $host "$request" $status $body_bytes_sent $request_time "$http_user_agent"';
  access_log ${c.dir}/logs/access.log podhost;
  client_body_temp_path ${c.dir}/tmp/client_body;
  proxy_temp_path ${c.dir}/tmp/proxy;
  fastcgi_temp_path ${c.dir}/tmp/fastcgi;
  uwsgi_temp_path ${c.dir}/tmp/uwsgi;
  scgi_temp_path ${c.dir}/tmp/scgi;
  # A pod's response is passed on as the client reads it, never spilled to a temp file: a tenant's
  # large responses to slow readers must not fill the host's disk, and the workers (nobody) may not
  # reach a temp dir under a private state dir (a 0700 one truncated every large response).
  proxy_max_temp_file_size 0;
  # Likewise a visitor's request body goes on to the pod as it arrives: never into a temp file (the
  # same reach problem; and uploads to many pods at once, 64 MB each, could fill the host's disk).
  proxy_request_buffering off;
  server_tokens off;
  server_names_hash_bucket_size 128;
  server_names_hash_max_size 65536;
  map $http_upgrade $podhost_connection_upgrade { default upgrade; "" ""; }
  # The front door: only requests that carry the edge's proof (shared/edge-proof.ts, docs/edge.md)
  # get in, and go on to the pod whose vhost names the visitor's host name, which the edge sends
  # in X-Podhost-Host (a Worker cannot set Host). Anything else is 403 here: nobody reaches a pod by
  # going around the edge, and the forwarded-address headers the pods see are only the edge's.
  server {
    listen ${c.listen} default_server;
    server_name _;
    default_type text/plain;
    client_max_body_size 0;
    secure_link $http_x_podhost_edge_proof,$http_x_podhost_edge_expires;
    secure_link_md5 "$secure_link_expires|$request_method|$http_x_podhost_host|$request_uri|$http_x_podhost_client_ip|$http_x_forwarded_proto|${c.edgeSecret}";
    location / {
      if ($secure_link != "1") {
        add_header X-Podhost-Ingress forbidden always;
        return 403 "only the edge may ask this host\\n";
      }
      proxy_pass http://unix:${c.podsSocket};
      proxy_http_version 1.1;
      proxy_set_header Host $http_x_podhost_host;
      proxy_set_header X-Podhost-Edge-Proof "";
      proxy_set_header X-Podhost-Edge-Expires "";
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $podhost_connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }
  }
  server {
    listen unix:${c.podsSocket} default_server;
    server_name _;
    add_header X-Podhost-Ingress default always;
    default_type text/plain;
    location / { return 404 "no pod answers for this host name\\n"; }
  }
  include ${c.dir}/vhosts/*.conf;
}
`;
}
