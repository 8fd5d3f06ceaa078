import path from "node:path";
import pc from "picocolors";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { findLink, writeLink } from "../lib/link";
import { packDirectory } from "../lib/pack";
import { mb, multipartStream, progressBar } from "../lib/upload";
import { streamDeployment } from "./deploys";
import { podUrl, waitRunning } from "./pods";

interface Opts {
  pod?: string;
  create?: string;
  preset?: string;
  plan?: string;
  zip?: boolean;
}

async function upload(
  ctx: Ctx,
  dir: string,
  url: "/api/pods/from-zip" | "/api/pods/{name}/zip",
  fields: Record<string, string>,
  name?: string,
) {
  const packed = await packDirectory(dir);
  for (const link of packed.skippedLinks) ctx.out.warn(`${link}: a symbolic link, not uploaded`);
  ctx.out.note(`Packed ${packed.files} files (${mb(packed.bytes)}) into ${mb(packed.zip.byteLength)}.`);
  const bar = progressBar("Uploading", !ctx.out.json);
  const body = multipartStream(
    fields,
    { field: "zip", name: "site.zip", type: "application/zip", data: packed.zip },
    (sent, total) => bar.update(sent, total),
  );
  try {
    const res = await ctx.api.fetch("post", url, {
      params: name ? { name } : undefined,
      raw: body.body,
      contentType: body.contentType,
    });
    return { packed, answer: (await res.json()) as Record<string, unknown> };
  } catch (error) {
    // the files are in place but the install failed: a failed deploy, with the install's output
    const failure = error as { status?: number; body?: { error?: string; deps_output?: string } };
    if (failure.status === 500 && failure.body?.deps_output !== undefined) {
      process.stderr.write(failure.body.deps_output);
      throw new CliError(
        failure.body.error ?? "installing the app's dependencies failed",
        EXIT.deployFailed,
        500,
      );
    }
    throw error;
  } finally {
    bar.done();
  }
}

/**
 * `deploy [dir]`: the linked pod (or --pod) gets the directory through the ZIP re-upload API, which
 * answers once the archive is unpacked and the app reloaded; `--create NAME` makes a new pod of it
 * (from-zip), waits until it runs and links the directory. A pod with a connected repository deploys
 * its branch instead (unless --zip) and streams the build log. Exit 5 when the deploy failed.
 */
export async function deploy(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const dir = path.resolve(args[0] ?? ".");
  if (opts.create) {
    const fields: Record<string, string> = { name: opts.create };
    if (opts.preset) fields.preset = opts.preset;
    if (opts.plan) fields.plan_slug = opts.plan;
    const { packed } = await upload(ctx, dir, "/api/pods/from-zip", fields);
    ctx.out.note(`Creating ${opts.create}…`);
    const pod = await waitRunning(ctx, opts.create);
    await writeLink(dir, pod.name);
    const url = podUrl(ctx, pod);
    ctx.out.result(
      { pod: pod.name, status: pod.status, url, files: packed.files, linked: true },
      () => `${pc.green("✓")} ${pod.name} serves ${url}`,
    );
    return;
  }
  const name = opts.pod ?? (await findLink(dir))?.pod ?? (await findLink())?.pod;
  if (!name)
    throw new CliError(
      "which pod? run podhost link NAME here, pass --pod NAME, or --create NAME",
      EXIT.usage,
    );
  if (!opts.zip) {
    const git = await ctx.api.call("get", "/api/pods/{name}/git", { params: { name } });
    if (git) {
      const started = await ctx.api.call("post", "/api/pods/{name}/git/deploy", { params: { name } });
      ctx.out.note(`Deploying ${name} from its repository (deployment ${started.id})…`);
      const d = await streamDeployment(ctx, name, started.id);
      const pod = await ctx.api.call("get", "/api/pods/{name}", { params: { name } });
      const url = podUrl(ctx, pod);
      const { build_log: _log, ...record } = d;
      // with --json the build log was a stream (one {type: "log"} line each): the outcome is one more
      // line of it, {type: "result"}, and a failure's {error, exit_code} line follows
      if (d.status !== "success") {
        if (ctx.out.json) ctx.out.record({ type: "result", pod: name, deployment: record, url }, () => "");
        throw new CliError(
          `deployment ${d.id} ${d.status}${d.failure ? `: ${d.failure.message}` : ""}`,
          EXIT.deployFailed,
        );
      }
      ctx.out.record(
        { type: "result", pod: name, deployment: record, url },
        () => `${pc.green("✓")} ${name} serves ${d.commit_sha?.slice(0, 10) ?? "the new commit"} at ${url}`,
      );
      return;
    }
  }
  const { packed, answer } = await upload(ctx, dir, "/api/pods/{name}/zip", {}, name);
  const pod = await ctx.api.call("get", "/api/pods/{name}", { params: { name } });
  const url = podUrl(ctx, pod);
  ctx.out.result(
    { pod: name, ...answer, url, bytes: packed.bytes },
    () => `${pc.green("✓")} ${name} serves ${packed.files} files at ${url}`,
  );
}
