import { spawn } from "node:child_process";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { readPublicKey } from "./account";

/**
 * `ssh [--pod P] [-i KEY.pub] [-- SSH ARGS…]`: adds the user's public key to the pod when it is
 * missing, then runs the real `ssh` (argv, no shell) with the pod's port and user; the arguments
 * after `--` go to ssh (a command to run, -L forwards…). Exits with ssh's status.
 */
export async function ssh(ctx: Ctx, args: string[], opts: { pod?: string; identity?: string }) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const access = await ctx.api.call("get", "/api/pods/{name}/ssh", { params: { name } });
  const { key } = await readPublicKey(opts.identity);
  const keys = await ctx.api.call("get", "/api/pods/{name}/ssh/keys", { params: { name } });
  const bare = (k: string) => k.split(/\s+/).slice(0, 2).join(" ");
  if (!keys.keys.some((k) => bare(k) === bare(key))) {
    await ctx.api.call("post", "/api/pods/{name}/ssh/keys", { params: { name }, body: { key } });
    ctx.out.note(`Added your public key to ${name}.`);
  }
  const argv = ["-p", String(access.port)];
  if (opts.identity) argv.push("-i", opts.identity.replace(/\.pub$/, ""));
  argv.push(`${access.user}@${access.host}`, ...args);
  if (ctx.out.json) {
    ctx.out.result({ ...access, argv: ["ssh", ...argv] }, () => "");
    return;
  }
  return new Promise<number>((resolve, reject) => {
    const child = spawn("ssh", argv, { stdio: "inherit" });
    child.on("error", (error) => reject(new CliError(`cannot run ssh: ${error.message}`, EXIT.error)));
    child.on("close", (code) => resolve(code ?? EXIT.error));
  });
}
