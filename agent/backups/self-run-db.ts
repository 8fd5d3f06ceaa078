import { PassThrough, Readable } from "node:stream";
import type { DumpEntry } from "../../shared/protocol/backups";
import type { ServiceType } from "../../shared/protocol/services";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { parseDotenv } from "../inside/dotenv";
import { readEnvFile } from "../inside/env-file";
import type { Logger } from "../logger";
import { boxName, boxOptions, startBox } from "./box";
import type { SelfRunServer } from "./self-run";
import { type DumpSource, type LoadTarget, SERVICE_TIMEOUT_S } from "./services";

/**
 * How a self-run server (./self-run.ts) is dumped and loaded: with the connection the app itself
 * uses, a `postgres://`, `mysql://` or `redis://` URL in ~/app/.env naming 127.0.0.1 (or
 * localhost, ::1) and the server's port; a Redis without one is reached without a password. The
 * clients run in a throwaway box made from the service image of the kind (the same pg_dump,
 * mariadb-dump and redis-cli as the managed services), joined to the pod's network namespace so
 * 127.0.0.1 is the pod's, with the box's own limits. The password reaches the client as the first
 * line of its stdin, never an argument or the box's environment; every other part of the URL is an
 * environment variable or a positional argument, never script text.
 */

export interface SelfRunLogin {
  user: string;
  password: string;
  database: string;
}

const SCHEME_KIND: Record<string, SelfRunServer["kind"]> = {
  "postgres:": "postgresql",
  "postgresql:": "postgresql",
  "mysql:": "mysql",
  "mariadb:": "mysql",
  "redis:": "redis",
};
const DEFAULT_PORT: Record<SelfRunServer["kind"], number> = { postgresql: 5432, mysql: 3306, redis: 6379 };
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);
const EXAMPLE: Record<SelfRunServer["kind"], string> = {
  postgresql: "postgres://user:password@127.0.0.1:PORT/database",
  mysql: "mysql://user:password@127.0.0.1:PORT/database",
  redis: "redis://:password@127.0.0.1:PORT",
};
/** names a client takes as they are: no option look-alike, no conninfo, no quoting games */
const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_$.-]{0,62}$/;

export const selfRunLabel = (s: Pick<SelfRunServer, "kind" | "port">) =>
  `the ${s.kind} server the app runs itself on 127.0.0.1:${s.port}`;

export const selfRunDumpFile = (s: Pick<SelfRunServer, "kind" | "port">) =>
  `self-${s.kind}-${s.port}.${s.kind === "redis" ? "rdb" : "sql"}`;

const decode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** the login for `server` from the app's .env values, or why there is none */
export function loginFor(
  server: Pick<SelfRunServer, "kind" | "port">,
  env: Record<string, string>,
): { ok: true; login: SelfRunLogin } | { ok: false; reason: string } {
  for (const value of Object.values(env)) {
    let url: URL;
    try {
      url = new URL(value.trim());
    } catch {
      continue;
    }
    if (SCHEME_KIND[url.protocol] !== server.kind || !LOCAL_HOSTS.has(url.hostname)) continue;
    if ((url.port ? Number(url.port) : DEFAULT_PORT[server.kind]) !== server.port) continue;
    const login = {
      user: decode(url.username),
      password: decode(url.password),
      database: decode(url.pathname.replace(/^\//, "")),
    };
    if (server.kind === "redis") {
      if (login.user && !SAFE_NAME.test(login.user))
        return { ok: false, reason: `the user in the redis URL for port ${server.port} is not a plain name` };
      return { ok: true, login: { ...login, database: "" } };
    }
    if (!SAFE_NAME.test(login.user) || !SAFE_NAME.test(login.database))
      return {
        ok: false,
        reason: `the ${server.kind} URL for port ${server.port} in ~/app/.env needs a plain user and database name (${EXAMPLE[server.kind]})`,
      };
    return { ok: true, login };
  }
  if (server.kind === "redis") return { ok: true, login: { user: "", password: "", database: "" } };
  return {
    ok: false,
    reason: `${selfRunLabel(server)} cannot be dumped: ~/app/.env has no URL for it (add one such as DATABASE_URL=${EXAMPLE[server.kind].replace("PORT", String(server.port))})`,
  };
}

/** the login for `server` from the pod's ~/app/.env (a missing file: no URL) */
export async function selfRunLogin(
  docker: DockerClient,
  prefix: string,
  pod: string,
  server: Pick<SelfRunServer, "kind" | "port">,
) {
  const env = await readEnvFile(docker, prefix, pod);
  return loginFor(server, env.exists ? parseDotenv(env.text) : {});
}

// $1 port, $2 user, $3 database; the password on stdin's first line. Output: the dump.
const DUMP: Record<SelfRunServer["kind"], string> = {
  postgresql: `set -u
IFS= read -r PGPASSWORD || true
export PGPASSWORD PGHOST=127.0.0.1 PGPORT=$1 PGUSER=$2 PGDATABASE=$3 PGCONNECT_TIMEOUT=10
exec /usr/lib/postgresql/15/bin/pg_dump --clean --if-exists --no-owner --no-privileges`,
  mysql: `set -u
IFS= read -r MYSQL_PWD || true
export MYSQL_PWD
exec /usr/bin/mariadb-dump --no-defaults --protocol=TCP -h 127.0.0.1 -P "$1" -u "$2" --connect-timeout=10 \\
  --single-transaction --routines --triggers --events --hex-blob --add-drop-table -- "$3"`,
  redis: `set -u
IFS= read -r REDISCLI_AUTH || true
export REDISCLI_AUTH
u=(); [ -n "$2" ] && u=(--user "$2")
[ -n "$REDISCLI_AUTH" ] || unset REDISCLI_AUTH
exec /usr/bin/redis-cli -h 127.0.0.1 -p "$1" "\${u[@]}" --no-auth-warning --rdb -`,
};

// $1 port, $2 user, $3 database; the password on stdin's first line, then the dump. All or nothing:
// one transaction (PostgreSQL), stop at the first error (MySQL). The dump is the tenant's (an
// imported archive): psql reads it restricted (svc-pg-restrict: no meta-command, no `\!` shell) and
// the MariaDB client sandboxed (no `system`, `source`, `tee`), as the managed services' svc-load. Redis reads an RDB only when it
// starts, so a running one is handed the dump the way a replica is: a scratch redis-server in the
// box serves the checked file on a free loopback port, the app's server is made its replica until
// the full sync is done, then made a primary again (kept in the box's tmpfs, gone with the box).
const LOAD: Record<SelfRunServer["kind"], string> = {
  postgresql: `set -u
IFS= read -r PGPASSWORD || true
export PGPASSWORD PGHOST=127.0.0.1 PGPORT=$1 PGUSER=$2 PGDATABASE=$3 PGCONNECT_TIMEOUT=10
set -o pipefail
/opt/podhost/bin/svc-pg-restrict | /usr/lib/postgresql/15/bin/psql -X -q -v ON_ERROR_STOP=1 --single-transaction >/dev/null`,
  mysql: `set -u
IFS= read -r MYSQL_PWD || true
export MYSQL_PWD
exec /usr/bin/mariadb --no-defaults --sandbox --protocol=TCP -h 127.0.0.1 -P "$1" -u "$2" --connect-timeout=10 -- "$3" >/dev/null`,
  redis: `set -u
die() { echo "$*" >&2; exit 1; }
IFS= read -r REDISCLI_AUTH || true
if [ -n "$REDISCLI_AUTH" ]; then export REDISCLI_AUTH; else unset REDISCLI_AUTH; fi
port=$1; u=(); [ -n "$2" ] && u=(--user "$2")
app() { /usr/bin/redis-cli -h 127.0.0.1 -p "$port" "\${u[@]}" --no-auth-warning "$@"; }
d=$(/usr/bin/mktemp -d /tmp/load.XXXXXX) || die "no scratch space"
/bin/cat >"$d/dump.rdb" || die "cannot store the dump"
/usr/bin/redis-check-rdb "$d/dump.rdb" >"$d/check" 2>&1 || die "not a valid RDB file: $(/usr/bin/tail -n 1 "$d/check")"
pid=
for _ in 1 2 3 4 5; do
  p=$(/usr/bin/shuf -i 20000-60000 -n 1)
  /usr/bin/redis-server --port "$p" --bind 127.0.0.1 --dir "$d" --dbfilename dump.rdb --save '' \
    --repl-diskless-sync-delay 0 --appendonly no --protected-mode no --logfile "$d/log" \\
    --enable-module-command no --enable-debug-command no --enable-protected-configs no &
  pid=$!
  for _ in $(/usr/bin/seq 50); do
    [ "$(/usr/bin/redis-cli -h 127.0.0.1 -p "$p" PING 2>/dev/null)" = PONG ] && break 2
    kill -0 "$pid" 2>/dev/null || break
    /usr/bin/sleep 0.1
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
done
[ -n "$pid" ] || die "the scratch server holding the dump did not start"
trap 'app REPLICAOF NO ONE >/dev/null 2>&1; kill "$pid" 2>/dev/null' EXIT
r=$(app REPLICAOF 127.0.0.1 "$p" 2>&1)
[ "$r" = OK ] || die "the server refused REPLICAOF: $(echo "$r" | /usr/bin/head -c 200)"
for _ in $(/usr/bin/seq 600); do
  i=$(app INFO replication 2>/dev/null | /usr/bin/tr -d '\r')
  if echo "$i" | /bin/grep -qxF master_link_status:up && echo "$i" | /bin/grep -qxF master_sync_in_progress:0; then
    r=$(app REPLICAOF NO ONE 2>&1)
    [ "$r" = OK ] || die "the server did not leave the replica role: $(echo "$r" | /usr/bin/head -c 200)"
    exit 0
  fi
  /usr/bin/sleep 0.1
done
die "the server did not take the dump within 60 s"`,
};

const argvOf = (script: string, server: SelfRunServer, login: SelfRunLogin) => [
  "/usr/bin/timeout",
  "-k",
  "5",
  String(SERVICE_TIMEOUT_S),
  "/bin/bash",
  "-c",
  script,
  "bash",
  String(server.port),
  login.user,
  login.database,
];

/** the password line, then (for a load) the dump */
export function withPassword(login: SelfRunLogin, rest?: Readable): Readable {
  const line = Buffer.from(`${login.password.replace(/[\r\n]/g, "")}\n`);
  if (!rest) return Readable.from([line]);
  const out = new PassThrough();
  out.write(line);
  rest.on("error", (err) => out.destroy(err));
  rest.pipe(out);
  return out;
}

export interface SelfRunDeps {
  docker: DockerClient;
  exec: StreamExecutor;
  prefix: string;
  log: Logger;
  serviceImages: Record<ServiceType, string>;
}

/**
 * `fn` with a box beside the pod for `server` (`job` names it with the backup's id), removed after.
 * The source or target `fn` gets runs the kind's client with `login`.
 */
export async function withSelfRunBox<T>(
  deps: SelfRunDeps,
  podContainer: string,
  job: string,
  server: SelfRunServer,
  login: SelfRunLogin,
  fn: (use: { dump: DumpSource; load: LoadTarget }) => Promise<T>,
): Promise<T> {
  const id = `${job}-db${server.port}`;
  const remove = await startBox(
    deps.docker,
    boxOptions(deps.prefix, id, deps.serviceImages[server.kind], {
      scratchBytes: 64 * 1024 * 1024,
      network: `container:${podContainer}`,
    }),
  );
  const container = boxName(deps.prefix, id);
  const label = selfRunLabel(server);
  try {
    return await fn({
      dump: {
        kind: server.kind,
        container,
        label,
        file: selfRunDumpFile(server),
        argv: argvOf(DUMP[server.kind], server, login),
        stdin: () => withPassword(login),
      },
      load: {
        kind: server.kind,
        container,
        label,
        argv: argvOf(LOAD[server.kind], server, login),
        stdin: (dump) => withPassword(login, dump),
      },
    });
  } finally {
    await remove().catch((err: unknown) =>
      deps.log.warn("backup: a self-run database's box could not be removed", { id, error: String(err) }),
    );
  }
}

/** the manifest's entry for a self-run server's dump */
export const selfRunEntry = (server: SelfRunServer, bytes: number): DumpEntry => ({
  kind: server.kind,
  file: `databases/${selfRunDumpFile(server)}`,
  bytes,
  port: server.port,
  ...(server.datadir ? { source: server.datadir } : {}),
});
