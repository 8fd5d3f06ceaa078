import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";

type Source = "app" | "web" | "error" | "build";
const SOURCES: Source[] = ["app", "web", "error", "build"];

interface Opts {
  lines?: string;
  source?: string;
  grep?: string;
  follow?: boolean;
}

/**
 * `logs [pod] [-n N] [--source S] [--grep RE] [-f]`: the API's logs (`GET /api/pods/{name}/logs`;
 * the filter is applied by the API). `-f` asks the API's live stream (`?follow=true`, server-sent
 * events) and prints each line as it comes, as newline-delimited JSON with --json.
 */
export async function logs(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  if (opts.source !== undefined && !SOURCES.includes(opts.source as Source))
    throw new CliError(`--source: one of ${SOURCES.join(", ")}`, EXIT.usage);
  const lines = opts.lines === undefined ? undefined : Number(opts.lines);
  if (lines !== undefined && !(Number.isInteger(lines) && lines > 0))
    throw new CliError("--lines: a positive whole number", EXIT.usage);
  const query = { source: opts.source as Source | undefined, lines, grep: opts.grep };
  if (!opts.follow) {
    const answer = await ctx.api.call("get", "/api/pods/{name}/logs", { params: { name }, query });
    ctx.out.result(answer, () => answer.lines.join("\n"));
    return;
  }
  const res = await ctx.api.fetch("get", "/api/pods/{name}/logs", {
    params: { name },
    query: { ...query, follow: "true" },
  });
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) {
    await res.body?.cancel();
    throw new CliError("this server's logs API has no live stream (follow): run podhost logs without -f");
  }
  // Server-sent events (docs/inside.md): `data: {"source","lines":[…]}` batches, `: keepalive`
  // comments, and a last `event: end` with `{"reason"}`.
  let ended: string | undefined;
  const dispatch = (event: string, data: string) => {
    let parsed: { lines?: unknown; source?: unknown; reason?: unknown } = {};
    try {
      parsed = JSON.parse(data) as typeof parsed;
    } catch {
      parsed = { lines: [data] };
    }
    if (event === "end") {
      ended = typeof parsed.reason === "string" ? parsed.reason : "ended";
      return;
    }
    const lines = Array.isArray(parsed.lines) ? parsed.lines : [];
    for (const line of lines)
      if (typeof line === "string") ctx.out.record({ source: parsed.source ?? null, line }, () => line);
  };
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let data: string[] = [];
  for await (const chunk of res.body ?? []) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl = buffer.indexOf("\n");
    while (nl >= 0) {
      const raw = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (raw === "") {
        if (data.length) dispatch(event, data.join("\n"));
        data = [];
        event = "message";
      } else if (raw.startsWith("data:")) data.push(raw.slice(raw.startsWith("data: ") ? 6 : 5));
      else if (raw.startsWith("event:")) event = raw.slice(6).trim();
      nl = buffer.indexOf("\n");
    }
    // an unterminated line is never held beyond 1 MiB
    if (buffer.length > 1 << 20) buffer = "";
    if (ended !== undefined) break;
  }
  if (ended !== undefined) ctx.out.note(`(the stream ended: ${ended})`);
}
