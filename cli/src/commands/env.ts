import { readFile, writeFile } from "node:fs/promises";
import { dotenvLine } from "../../../agent/docker/spec-files";
import { parseDotenv } from "../../../agent/inside/dotenv";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";

/**
 * The app's environment variables (`/api/pods/{name}/env`). Dotenv files are read and written with
 * the pod's own parser and writer (agent/inside/dotenv.ts, the port of the pod's .env loader), so a
 * value with spaces, quotes, `#` or newlines makes the round trip pull → push unchanged.
 */

type Opts = { pod?: string; replace?: boolean };

export async function ls(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const env = await ctx.api.call("get", "/api/pods/{name}/env", { params: { name } });
  ctx.out.result(env, () =>
    Object.keys(env.vars).length === 0
      ? "No variables."
      : table(
          ["KEY", "VALUE"],
          Object.entries(env.vars).map(([k, v]) => [k, JSON.stringify(v).slice(1, -1)]),
        ),
  );
}

export async function get(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const [key = ""] = args;
  const name = await podName(opts.pod);
  const env = await ctx.api.call("get", "/api/pods/{name}/env", { params: { name } });
  if (!Object.hasOwn(env.vars, key)) throw new CliError(`${key}: not set on ${name}`, EXIT.notFound);
  const value = env.vars[key] ?? "";
  ctx.out.result({ key, value }, () => value);
}

function pairs(args: string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf("=");
    if (eq <= 0) throw new CliError(`${arg}: expected KEY=VALUE`, EXIT.usage);
    vars[arg.slice(0, eq)] = arg.slice(eq + 1);
  }
  return vars;
}

export async function set(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const vars = pairs(args);
  const name = await podName(opts.pod);
  const env = await ctx.api.call("put", "/api/pods/{name}/env", { params: { name }, body: { vars } });
  ctx.out.result(
    env,
    () =>
      `Set ${Object.keys(vars).join(", ")} on ${name}.${env.restarted.length ? ` Restarted: ${env.restarted.join(", ")}.` : ""}`,
  );
}

export async function unset(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const env = await ctx.api.call("delete", "/api/pods/{name}/env", {
    params: { name },
    body: { keys: args },
  });
  ctx.out.result(env, () => `Removed ${args.join(", ")} from ${name}.`);
}

/** The variables as a dotenv file, every value double-quoted with escapes. */
export function formatDotenv(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([k, v]) => `${dotenvLine(k, v)}\n`)
    .join("");
}

export async function pull(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const [file = ".env"] = args;
  const name = await podName(opts.pod);
  const env = await ctx.api.call("get", "/api/pods/{name}/env", { params: { name } });
  const text = formatDotenv(env.vars);
  if (file === "-") {
    if (ctx.out.json) ctx.out.result(env, () => "");
    else process.stdout.write(text);
    return;
  }
  await writeFile(file, text, { mode: 0o600 });
  ctx.out.result(
    { ...env, file },
    () => `Wrote ${Object.keys(env.vars).length} variables of ${name} to ${file}.`,
  );
}

async function readInput(file: string): Promise<string> {
  if (file !== "-") {
    return readFile(file, "utf8").catch(() => {
      throw new CliError(`${file}: cannot be read`, EXIT.usage);
    });
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function push(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const [file = ".env"] = args;
  const vars = parseDotenv(await readInput(file));
  const name = await podName(opts.pod);
  let removed: string[] = [];
  if (opts.replace) {
    const current = await ctx.api.call("get", "/api/pods/{name}/env", { params: { name } });
    removed = Object.keys(current.vars).filter((k) => !Object.hasOwn(vars, k));
  }
  let env = await ctx.api.call("put", "/api/pods/{name}/env", { params: { name }, body: { vars } });
  if (removed.length)
    env = {
      ...(await ctx.api.call("delete", "/api/pods/{name}/env", {
        params: { name },
        body: { keys: removed },
      })),
      restarted: env.restarted,
    };
  ctx.out.result(
    { ...env, removed },
    () =>
      `Set ${Object.keys(vars).length} variables on ${name}${removed.length ? `, removed ${removed.join(", ")}` : ""}.`,
  );
}
