import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";

/**
 * `exec [--pod NAME] -- CMD ARGS…`: the command's output on our stdout and stderr, and its exit
 * status as ours (124 on the timeout, as the API reports it). With --json, the API's answer.
 */
export async function exec(ctx: Ctx, args: string[], opts: { pod?: string; timeout?: string }) {
  requireCredential(ctx);
  if (args.length === 0) throw new CliError("exec: which command? podhost exec -- CMD ARGS…", EXIT.usage);
  const name = await podName(opts.pod);
  const timeout = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0))
    throw new CliError("--timeout: a whole number of seconds", EXIT.usage);
  const result = await ctx.api.call("post", "/api/pods/{name}/exec", {
    params: { name },
    body: { command: args, timeout_s: timeout },
  });
  if (ctx.out.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
  }
  if (result.exit_code === null) throw new CliError("the host could not report the command's exit status");
  return result.exit_code;
}
