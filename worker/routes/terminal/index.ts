import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { statusOfErrorCode } from "../../../shared/errors";
import { TERMINAL_CLOSE, TERMINAL_COLS, TERMINAL_ROWS } from "../../../shared/protocol/terminal";
import { joinTerminalRelay } from "../../durable-objects/terminal-relay/client";
import type { AppEnv } from "../../http/app-env";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError, unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { enforceFairShare } from "../../http/rate-limit";
import { authenticated, createRouter, errors, serviceContext } from "../../http/router";
import { openTerminal, terminalPod } from "../../services/terminal";
import { PodParams } from "../pods/schemas";

/**
 * Cross-site WebSocket hijacking. A browser sends the API's cookies with a WebSocket upgrade from
 * any page (the cross-site check for POSTs does not apply to a GET, and `SameSite=Lax` does not stop
 * a pod's page on a sibling host name), and the page on the other origin could then type into the
 * victim's shell. So an upgrade carrying an `Origin` must come from the API's own origin, whatever
 * its credential; clients that are no browser (the CLI, scripts) send no `Origin` and are let
 * through to the credential check.
 */
const sameOriginOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const own = new URL(c.env.PUBLIC_URL).origin;
  const origin = c.req.header("origin");
  if (origin !== undefined && origin !== own)
    throw new ApiError(
      "forbidden",
      `cross-site WebSocket refused: a terminal is opened only from ${own}, and this request comes from ${JSON.stringify(origin.slice(0, 200))}`,
    );
  await next();
};

const size = (bounds: { min: number; max: number; default: number }, what: string) =>
  z.coerce
    .number()
    .int()
    .min(bounds.min)
    .max(bounds.max)
    .default(bounds.default)
    .openapi({ description: `the terminal's ${what} in character cells`, example: bounds.default });

const TerminalQuery = z.object({ cols: size(TERMINAL_COLS, "width"), rows: size(TERMINAL_ROWS, "height") });

/**
 * A refusal after the upgrade was admitted (pod not running, too many sessions, host away): the
 * socket is accepted, told why in an `error` message, and closed with 4000 + the status, because a
 * browser's WebSocket never shows the script an HTTP status.
 */
function refusedSocket(status: number, message: string): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  server.send(JSON.stringify({ type: "error", status, error: message }));
  server.close(4000 + status, message.slice(0, 120));
  return new Response(null, { status: 101, webSocket: client });
}

/** Mounted at /api/pods: the web terminal (docs/dashboard.md "Terminal"). */
export const terminalRouter = createRouter().openapi(
  createRoute({
    tags: ["Terminal"],
    security: authenticated,
    middleware: [jsonBodyLimit, sameOriginOnly, requireAuth],
    operationId: "openPodTerminal",
    method: "get",
    path: "/{name}/terminal",
    summary: "An interactive shell in the pod as pod_user, over a WebSocket (an extension)",
    description: [
      "Upgrade to a WebSocket (`Upgrade: websocket`); the shell is `bash -l` as pod_user with a real pty of `cols`×`rows`.",
      'Binary frames are terminal bytes both ways. Text frames are JSON: from the client `{type:"resize",cols,rows}` and',
      '`{type:"ack",bytes}` (output bytes drawn: the host sends at most 256 KiB not yet acknowledged); from the server',
      '`{type:"exit",code}` and `{type:"error",status,error}`. A refusal after the credential and pod checks (pod not',
      `running 400, too many sessions 429, host unavailable 503) is an \`error\` message and close code 4000 + status;`,
      `an idle session (nothing either way for 30 min) is closed with ${TERMINAL_CLOSE.idle}.`,
      "An `Origin` other than the API's own is refused (403). Without `Upgrade: websocket` the answer is 426.",
    ].join(" "),
    request: { params: PodParams, query: TerminalQuery },
    responses: {
      101: { description: "Switching Protocols: the terminal's WebSocket" },
      ...errors(400, 401, 403, 404, 426),
    },
  }),
  async (c) => {
    const ctx = serviceContext(c);
    const teamId = c.get("caller").teamId;
    const { name } = c.req.valid("param");
    const { cols, rows } = c.req.valid("query");
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      unwrap(await terminalPod({ ctx, teamId, input: { name } }));
      return c.json({ error: "expected a WebSocket upgrade (Upgrade: websocket)" }, 426);
    }
    unwrap(await terminalPod({ ctx, teamId, input: { name } }));
    try {
      // opening a terminal starts a process in the pod: it counts like an exec
      await enforceFairShare(c.env, "exec", teamId, name);
    } catch (error) {
      if (error instanceof ApiError) return refusedSocket(error.status, error.message);
      throw error;
    }
    const opened = await openTerminal({ ctx, teamId, input: { name, cols, rows } });
    if (!opened.ok) return refusedSocket(statusOfErrorCode[opened.code], opened.message);
    return joinTerminalRelay(c.env, opened.value.relay, "browser", c.req.raw);
  },
);
