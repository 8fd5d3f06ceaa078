import { stat } from "node:fs/promises";
import path from "node:path";
import { type Ctx, requireCredential } from "../lib/context";
import { saveDownload } from "../lib/download";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";
import { confirm } from "../lib/tty";
import { mb, multipartStream, progressBar } from "../lib/upload";

type Opts = { pod?: string; yes?: boolean; note?: string; wait?: boolean };

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

export async function rm(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const id = args[0] ?? "";
  if (!opts.yes && !(await confirm(`Delete ${name}'s backup ${id} and its archive?`, "--yes")))
    throw new CliError("not deleted");
  const r = await ctx.api.call("delete", "/api/pods/{name}/backups/{id}", { params: { name, id } });
  ctx.out.result({ id, ...r }, () => `Deleted backup ${id} of ${name}.`);
}

export async function download(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const [id = "", file = `${id}.tar.gz`] = args;
  const res = await ctx.api.fetch("get", "/api/pods/{name}/backups/{id}/download", { params: { name, id } });
  const bytes = await saveDownload(res, file, "Downloading", !ctx.out.json);
  ctx.out.result({ id, file, bytes }, () => `Saved ${id} to ${file} (${mb(bytes)}).`);
}

/**
 * `import FILE`: a `.tar.gz` (as `download` saves it) uploaded as a backup of the pod, streamed from
 * disk with a progress bar. The API answers 202 `in_progress`; the pod's host test-restores it before
 * it counts, so `--wait` polls until it is `completed` (exit 0) or `failed` (exit 1, with the reason).
 */
export async function importArchive(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const file = args[0] ?? "";
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw new CliError(`${file}: not a file that can be read`, EXIT.usage);
  const bar = progressBar("Uploading", !ctx.out.json);
  const body = multipartStream(
    opts.note === undefined ? {} : { note: opts.note },
    {
      field: "file",
      name: path.basename(file),
      type: "application/gzip",
      data: { path: file, size: info.size },
    },
    (sent, total) => bar.update(sent, total),
  );
  let backup: Backup;
  try {
    const res = await ctx.api.fetch("post", "/api/pods/{name}/backups/import", {
      params: { name },
      raw: body.body,
      contentType: body.contentType,
    });
    backup = (await res.json()) as Backup;
  } finally {
    bar.done();
  }
  if (opts.wait) {
    ctx.out.note(`Uploaded ${mb(info.size)}; ${name}'s host is test-restoring ${backup.id}…`);
    backup = await waitChecked(ctx, name, backup.id);
    if (backup.status === "failed") {
      if (ctx.out.json) ctx.out.result(backup, () => "");
      throw new CliError(
        `backup ${backup.id} failed its check: ${backup.error ?? backup.verify_error ?? "no reason given"}`,
      );
    }
  }
  const imported = backup;
  ctx.out.result(imported, () =>
    imported.status === "completed"
      ? `Imported ${file} as ${imported.id}, verified ${imported.verified_at ?? ""}.`
      : `Imported ${file} as ${imported.id}: ${imported.status} until ${name}'s host has test-restored it (podhost backups ls).`,
  );
}

type Backup = Awaited<ReturnType<typeof getBackup>>;

const getBackup = (ctx: Ctx, name: string, id: string) =>
  ctx.api.call("get", "/api/pods/{name}/backups/{id}", { params: { name, id } });

/** Polls a backup until it is no longer in progress (the host's check takes seconds to minutes). */
async function waitChecked(ctx: Ctx, name: string, id: string, timeoutMs = 600_000): Promise<Backup> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const backup = await getBackup(ctx, name, id);
    if (backup.status !== "in_progress") return backup;
    if (Date.now() > deadline)
      throw new CliError(
        `backup ${id} is still in progress after ${timeoutMs / 1000} s (podhost backups ls)`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}
