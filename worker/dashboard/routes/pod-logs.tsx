import { Hono } from "hono";
import { LOG_SOURCES, type LogSource } from "../../../shared/protocol/inside";
import type { AppEnv } from "../../http/app-env";
import { readPodLogs } from "../../services/inside/logs";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import {
  asUtc,
  type HistoryRead,
  LOG_HISTORY_LINES,
  LOGS_START_LINES,
  LogsPage,
  rangeField,
} from "../pages/pod/logs";
import { requireSignedIn } from "../session";

/**
 * A pod's Logs tab (docs/dashboard.md "Logs"): a running pod's page asks its host nothing (the
 * browser's stream brings the lines); a stopped pod's last lines, and a range of the log's history
 * (`since`/`until`), are read through the API's verb.
 */
export const podLogsRouter = new Hono<AppEnv>();

podLogsRouter.get("/pods/:name/logs", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  const asked = c.req.query("source") ?? "app";
  const source: LogSource = (LOG_SOURCES as readonly string[]).includes(asked) ? (asked as LogSource) : "app";
  const grep = (c.req.query("grep") ?? "").slice(0, 1000);
  // a range of the history (docs/logs.md): the picker's UTC times, read once through the API's verb
  const since = rangeField(c.req.query("since"));
  const until = rangeField(c.req.query("until"));
  if (since || until) {
    const read = await readPodLogs({
      ctx: page.ctx,
      teamId: page.caller.teamId,
      input: {
        name: pod.name,
        source,
        lines: LOG_HISTORY_LINES,
        ...(grep ? { grep } : {}),
        ...(since ? { since: asUtc(since) } : {}),
        ...(until ? { until: asUtc(until) } : {}),
      },
    });
    const history: HistoryRead = read.ok
      ? {
          ok: true,
          lines: grep ? [...read.value.lines].reverse() : read.value.lines,
          truncated: read.value.truncated === true,
        }
      : { ok: false, error: read.message };
    return c.html(<LogsPage page={page} data={{ pod, source, grep, range: { since, until }, history }} />);
  }
  let still: Parameters<typeof LogsPage>[0]["data"]["still"];
  if (pod.status !== "running") {
    const read = await readPodLogs({
      ctx: page.ctx,
      teamId: page.caller.teamId,
      input: { name: pod.name, source, lines: LOGS_START_LINES, ...(grep ? { grep } : {}) },
    });
    still = read.ok
      ? { ok: true, lines: grep ? [...read.value.lines].reverse() : read.value.lines }
      : { ok: false, error: read.message };
  }
  return c.html(<LogsPage page={page} data={{ pod, source, grep, ...(still ? { still } : {}) }} />);
});
