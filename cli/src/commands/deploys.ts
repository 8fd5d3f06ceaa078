import pc from "picocolors";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";

export async function ls(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  const list = await ctx.api.call("get", "/api/pods/{name}/git/deployments", { params: { name } });
  ctx.out.result(list, () =>
    list.deployments.length === 0
      ? "No deployments."
      : table(
          ["ID", "STATUS", "TRIGGER", "COMMIT", "CREATED"],
          list.deployments.map((d) => [
            d.id,
            d.status,
            d.trigger,
            (d.commit_sha ?? "").slice(0, 10),
            d.created_at,
          ]),
        ),
  );
}

/**
 * Streams a deployment's build log to stdout while it runs (the API ends the stream when the
 * deployment is over), then answers the deployment; a failed one exits 5 with its reason.
 */
export async function streamDeployment(ctx: Ctx, name: string, id: string) {
  const res = await ctx.api.fetch("get", "/api/pods/{name}/git/deployments/{id}/log", {
    params: { name, id },
  });
  const decoder = new TextDecoder();
  if (res.body) {
    for await (const chunk of res.body) {
      const text = decoder.decode(chunk as Uint8Array, { stream: true });
      if (ctx.out.json) {
        for (const line of text.split("\n")) if (line) ctx.out.record({ type: "log", line }, () => "");
      } else process.stderr.write(text);
    }
  }
  // the stream ended: the deployment is over (or the connection broke; the record says which)
  for (let i = 0; i < 30; i++) {
    const d = await ctx.api.call("get", "/api/pods/{name}/git/deployments/{id}", { params: { name, id } });
    if (d.status !== "deploying") return d;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new CliError(`deployment ${id} is still running; follow it with podhost deploys log ${id} -f`);
}

export async function log(ctx: Ctx, args: string[], opts: { follow?: boolean }) {
  requireCredential(ctx);
  const [id = "", pod] = args;
  const name = await podName(pod);
  if (opts.follow) {
    const d = await streamDeployment(ctx, name, id);
    const { build_log: _log, ...rest } = d;
    ctx.out.result(rest, () => `${d.status === "success" ? pc.green("✓") : pc.red("✗")} ${d.id} ${d.status}`);
    return d.status === "failed" ? EXIT.deployFailed : EXIT.ok;
  }
  const d = await ctx.api.call("get", "/api/pods/{name}/git/deployments/{id}", { params: { name, id } });
  ctx.out.result(d, () => d.build_log);
}

export async function rollback(ctx: Ctx, args: string[], opts: { pod?: string }) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const d = await ctx.api.call("post", "/api/pods/{name}/git/rollback", {
    params: { name },
    body: args[0] ? { deployment_id: args[0] } : {},
  });
  ctx.out.result(d, () => `Rolling back ${name}: deployment ${d.id} (${d.status}).`);
}
