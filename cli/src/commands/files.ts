import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { type Ctx, requireCredential } from "../lib/context";
import { saveDownload } from "../lib/download";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";
import { mb, multipartStream, progressBar } from "../lib/upload";

/**
 * The Files API (docs/files.md). Paths in the pod are as the API takes them: absolute, or relative
 * to the app (`index.html` is /home/pod_user/app/index.html). In `cp`, a pod path starts with `:`.
 */
type Opts = { pod?: string };
const APP = "/home/pod_user/app";
const podPath = (p: string) => (p.startsWith("/") ? p : path.posix.join(APP, p));

export async function ls(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const list = await ctx.api.call("get", "/api/pods/{name}/files", {
    params: { name },
    query: args[0] ? { path: podPath(args[0]) } : {},
  });
  ctx.out.result(list, () =>
    table(
      ["PERMISSIONS", "SIZE", "NAME"],
      list.files.map((f) => [f.permissions, f.size, f.is_dir ? `${f.name}/` : f.name]),
    ),
  );
}

export async function cat(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const file = await ctx.api.call("get", "/api/pods/{name}/files/content", {
    params: { name },
    query: { path: podPath(args[0] ?? "") },
  });
  if (ctx.out.json) ctx.out.result(file, () => "");
  else process.stdout.write(file.content);
}

export async function rmPath(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(opts.pod);
  const target = podPath(args[0] ?? "");
  const result = await ctx.api.call("delete", "/api/pods/{name}/files", {
    params: { name },
    query: { path: target },
  });
  ctx.out.result(result, () => `Deleted ${target}.`);
}

/** `cp SRC DST`: one side is the pod's (`:path`); an upload lands in DST's directory under SRC's name. */
export async function cp(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const [src = "", dst = ""] = args;
  const name = await podName(opts.pod);
  if (src.startsWith(":") === dst.startsWith(":"))
    throw new CliError(
      "cp: one side must be the pod's, written :path (podhost files cp site.zip :app/)",
      EXIT.usage,
    );
  if (src.startsWith(":")) {
    const remote = podPath(src.slice(1));
    const res = await ctx.api.fetch("get", "/api/pods/{name}/files/download", {
      params: { name },
      query: { path: remote },
    });
    const local = (await stat(dst).catch(() => undefined))?.isDirectory()
      ? path.join(dst, path.posix.basename(remote))
      : dst;
    const bytes = await saveDownload(res, local, "Downloading", !ctx.out.json);
    ctx.out.result({ from: remote, to: local, bytes }, () => `${remote} → ${local} (${mb(bytes)})`);
    return;
  }
  const data = await readFile(src).catch(() => {
    throw new CliError(`${src}: cannot be read`, EXIT.usage);
  });
  const remoteDir = podPath(dst.slice(1) || ".").replace(/\/$/, "");
  const bar = progressBar("Uploading", !ctx.out.json);
  const body = multipartStream(
    { path: remoteDir },
    {
      field: "file",
      name: path.basename(src),
      type: "application/octet-stream",
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    },
    (sent, total) => bar.update(sent, total),
  );
  try {
    const res = await ctx.api.fetch("post", "/api/pods/{name}/files/upload", {
      params: { name },
      raw: body.body,
      contentType: body.contentType,
    });
    const answer = (await res.json()) as Record<string, unknown>;
    const to = path.posix.join(remoteDir, path.basename(src));
    ctx.out.result(
      { ...answer, from: src, to, bytes: data.byteLength },
      () => `${src} → ${to} (${mb(data.byteLength)})`,
    );
  } finally {
    bar.done();
  }
}
