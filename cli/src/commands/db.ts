import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";
import { confirm } from "../lib/tty";

type ServiceType = "mysql" | "postgresql" | "redis";
const TYPES: ServiceType[] = ["postgresql", "mysql", "redis"];
type Opts = { pod?: string; yes?: boolean };

function serviceType(given: string | undefined): ServiceType {
  if (given && TYPES.includes(given as ServiceType)) return given as ServiceType;
  throw new CliError(`which database? one of ${TYPES.join(", ")}`, EXIT.usage);
}

export async function ls(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const list = await ctx.api.call("get", "/api/pods/{name}/services", { params: { name } });
  ctx.out.result(list, () =>
    list.length === 0
      ? "No databases."
      : table(
          ["TYPE", "STATUS"],
          list.map((s) => [s.service_type, s.status]),
        ),
  );
}

export async function add(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const s = await ctx.api.call("post", "/api/pods/{name}/services", {
    params: { name },
    body: { service_type: serviceType(args[0]) },
  });
  ctx.out.result(s, () => `${s.service_type} on ${name}: ${s.status}`);
}

async function credentials(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  return ctx.api.call("get", "/api/pods/{name}/services/{serviceType}/credentials", {
    params: { name, serviceType: serviceType(args[0]) },
  });
}

export async function creds(ctx: Ctx, args: string[], opts: Opts) {
  const c = await credentials(ctx, args, opts);
  ctx.out.result(c, () =>
    [
      `host:     ${c.host}:${c.port}`,
      c.username ? `user:     ${c.username}` : "",
      `password: ${c.password}`,
      c.database ? `database: ${c.database}` : "",
    ]
      .filter(Boolean)
      .join("\n"),
  );
}

/** The connection URL as the app inside the pod uses it (the server listens on the pod's loopback). */
export async function url(ctx: Ctx, args: string[], opts: Opts) {
  const c = await credentials(ctx, args, opts);
  const scheme = { postgresql: "postgres", mysql: "mysql", redis: "redis" }[c.service_type];
  const user = c.username ? encodeURIComponent(c.username) : "";
  const auth = `${user}:${encodeURIComponent(c.password)}@`;
  const value = `${scheme}://${auth}${c.host}:${c.port}${c.database ? `/${encodeURIComponent(c.database)}` : ""}`;
  ctx.out.result({ url: value }, () => value);
}

export async function rm(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const type = serviceType(args[0]);
  if (!opts.yes && !(await confirm(`Remove ${type} and its data from ${name}?`, "--yes")))
    throw new CliError("not removed");
  const result = await ctx.api.call("delete", "/api/pods/{name}/services/{serviceType}", {
    params: { name, serviceType: type },
  });
  ctx.out.result(result, () => `Removed ${type} from ${name}.`);
}
