import { type Ctx, requireCredential } from "../lib/context";
import { podName } from "../lib/link";
import { table } from "../lib/output";

type Opts = { pod?: string };

export async function ls(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const list = await ctx.api.call("get", "/api/pods/{name}/domains", { params: { name } });
  ctx.out.result(list, () =>
    list.domains.length === 0
      ? "No custom domains."
      : table(
          ["ID", "DOMAIN", "STATUS", "TXT RECORD"],
          list.domains.map((d) => [
            d.id,
            d.domain,
            d.status,
            `${d.verification.name} = ${d.verification.value}`,
          ]),
        ),
  );
}

export async function add(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const d = await ctx.api.call("post", "/api/pods/{name}/domains", {
    params: { name },
    body: { domain: args[0] ?? "" },
  });
  ctx.out.result(
    d,
    () =>
      `Added ${d.domain} (${d.status}). Prove it is yours with a TXT record:\n  ${d.verification.name}  TXT  ${d.verification.value}\nthen: podhost domains verify ${d.id}`,
  );
}

export async function verify(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const d = await ctx.api.call("post", "/api/pods/{name}/domains/{id}/verify", {
    params: { name, id: args[0] ?? "" },
  });
  // a verified domain's answer also says where its certificate is (a failed one was just restarted)
  ctx.out.result(d, () => `${d.domain}: ${d.status}${d.tls_status ? `, HTTPS ${d.tls_status}` : ""}`);
}

export async function rm(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const id = args[0] ?? "";
  const result = await ctx.api.call("delete", "/api/pods/{name}/domains/{id}", { params: { name, id } });
  ctx.out.result({ id, ...result }, () => `Removed ${id}.`);
}
