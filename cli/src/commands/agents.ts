import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";

type Opts = { pod?: string; version?: string };
const AGENTS = ["claude-code", "codex", "gemini-cli", "opencode", "qwen-code", "auggie"] as const;
type Agent = (typeof AGENTS)[number];

export async function ls(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const installed = await ctx.api.call("get", "/api/pods/{name}/agents", { params: { name } });
  ctx.out.result(installed, () =>
    installed.agents.length === 0
      ? `No coding agents on ${name}; one of ${AGENTS.join(", ")}: podhost agents install NAME`
      : table(
          ["AGENT", "STATUS", "VERSION", "COMMAND"],
          installed.agents.map((a) => [a.slug, a.status, a.version, a.command]),
        ),
  );
}

export async function install(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const agent = args[0] as Agent;
  if (!AGENTS.includes(agent)) throw new CliError(`which agent? one of ${AGENTS.join(", ")}`, EXIT.usage);
  const name = await podName(opts.pod);
  const r = await ctx.api.call("post", "/api/pods/{name}/agents", {
    params: { name },
    body: { agent, version: opts.version },
  });
  ctx.out.result(r, () => `Installing ${agent} on ${name}…`);
}

export async function rm(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const slug = (args[0] ?? "") as Agent;
  const r = await ctx.api.call("delete", "/api/pods/{name}/agents/{slug}", { params: { name, slug } });
  ctx.out.result({ slug, ...r }, () => `Removed ${slug} from ${name}.`);
}
