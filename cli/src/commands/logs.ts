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
  since?: string;
  until?: string;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time for `--since`/`--until`, as the API's ISO 8601: a duration before now (`90s`, `30m`,
 * `2h`, `7d`), a day (`2026-11-27`, its start in UTC), or a date and time with `Z` or an offset.
 */
export function parseTime(flag: string, text: string, now = Date.now()): string {
  const ago = /^(\d{1,6})([smhd])$/.exec(text);
  if (ago) return new Date(now - Number(ago[1]) * (UNIT_MS[ago[2] as string] as number)).toISOString();
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const stamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const ms = day ? Date.parse(`${text}T00:00:00Z`) : stamp ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms))
    throw new CliError(
      `${flag}: a duration before now (30m, 2h, 7d), a day (2026-11-27) or a time with its zone (2026-11-27T12:00:00Z)`,
      EXIT.usage,
    );
  return new Date(ms).toISOString();
}

/**
 * `logs [pod] [-n N] [--source S] [--grep RE] [--since T [--until T]] [-f]`: the API's logs (`GET
 * /api/pods/{name}/logs`; the filter is applied by the API). `--since`/`--until` read the history
 * the host keeps (docs/logs.md) instead of the live file. `-f` asks the API's live stream
 * (`?follow=true`, server-sent events) and prints each line as it comes, as newline-delimited JSON
 * with --json.
 */
export async function logs(ctx: Ctx, args: string[], opts: Opts) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  if (opts.source !== undefined && !SOURCES.includes(opts.source as Source))
    throw new CliError(`--source: one of ${SOURCES.join(", ")}`, EXIT.usage);
  const lines = opts.lines === undefined ? undefined : Number(opts.lines);
  if (lines !== undefined && !(Number.isInteger(lines) && lines > 0))
    throw new CliError("--lines: a positive whole number", EXIT.usage);
  const since = opts.since === undefined ? undefined : parseTime("--since", opts.since);
  const until = opts.until === undefined ? undefined : parseTime("--until", opts.until);
  if ((since !== undefined || until !== undefined) && opts.follow)
    throw new CliError("--since, --until: not with -f (a follow starts at the log's end)", EXIT.usage);
  if (since !== undefined && until !== undefined && until < since)
    throw new CliError("--until: not before --since", EXIT.usage);
  const query = { source: opts.source as Source | undefined, lines, grep: opts.grep, since, until };
  if (!opts.follow) {
    const answer = await ctx.api.call("get", "/api/pods/{name}/logs", { params: { name }, query });
    ctx.out.result(answer, () => answer.lines.join("\n"));
    if (answer.truncated)
      ctx.out.note("(a bound cut the search short: older lines of the range were not searched)");
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
