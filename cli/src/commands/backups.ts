import { type Ctx, requireCredential } from "../lib/context";
import { saveDownload } from "../lib/download";
import { CliError } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";
import { confirm } from "../lib/tty";
import { mb } from "../lib/upload";

type Opts = { pod?: string; yes?: boolean; note?: string };

export async function ls(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const list = await ctx.api.call("get", "/api/pods/{name}/backups", { params: { name } });
  ctx.out.result(list, () =>
    list.backups.length === 0
      ? "No backups."
      : table(
          ["ID", "STATUS", "TRIGGER", "SIZE", "VERIFIED", "NOTE"],
          list.backups.map((b) => [
            b.id,
            b.status,
            b.trigger,
            b.size === null ? "" : mb(b.size),
            b.verified_at ?? "",
            b.note ?? "",
          ]),
        ),
  );
}

export async function create(ctx: Ctx, _args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const b = await ctx.api.call("post", "/api/pods/{name}/backups", {
    params: { name },
    body: { note: opts.note },
  });
  ctx.out.result(b, () => `Backup ${b.id} of ${name}: ${b.status}.`);
}

export async function restore(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const id = args[0] ?? "";
  if (!opts.yes && !(await confirm(`Replace ${name}'s files and databases with backup ${id}?`, "--yes")))
    throw new CliError("not restored");
  const r = await ctx.api.call("post", "/api/pods/{name}/backups/{id}/restore", { params: { name, id } });
  ctx.out.result(r, () => `Restoring ${id} into ${name}…`);
}

export async function download(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const [id = "", file = `${id}.tar.gz`] = args;
  const res = await ctx.api.fetch("get", "/api/pods/{name}/backups/{id}/download", { params: { name, id } });
  const bytes = await saveDownload(res, file, "Downloading", !ctx.out.json);
  ctx.out.result({ id, file, bytes }, () => `Saved ${id} to ${file} (${mb(bytes)}).`);
}
