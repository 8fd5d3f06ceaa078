import type { Context } from "hono";
import { stream } from "hono/streaming";
import type { HtmlEscapedString } from "hono/utils/html";
import type { AppEnv } from "../http/app-env";
import { AuthBody, DOCUMENT_START, Head, type HeadProps } from "./layout";

/**
 * A page sent in two parts: its `<head>` at once, its `<body>` when the data it shows has been read.
 * The browser fetches the stylesheet and the deferred scripts the head names while the Worker waits
 * for D1, and the first byte leaves after the sign-in check alone (bench/dashboard.ts measures the
 * pods list's time to first byte against `GET /api/pods`). `body` is started by the caller before
 * this is called, so its reads run while the head is written.
 *
 * The price: the status (200) is sent before the data is read, so a read that fails afterwards
 * cannot become a 500. It ends the page with the error page's words and the request id instead,
 * and is logged as a 500 would be. Only pages whose reads fail on nothing but the service's own
 * faults stream (the pods list): a page that can answer 404 renders whole.
 */
export function streamPage(c: Context<AppEnv>, head: HeadProps, body: Promise<HtmlEscapedString>): Response {
  // handled below once awaited; a rejection before then is not an unhandled one
  body.catch(() => {});
  c.header("Content-Type", "text/html; charset=UTF-8");
  return stream(
    c,
    async (s) => {
      await s.write(DOCUMENT_START + (await (<Head {...head} />).toString()));
      const html = await (await body).toString();
      await s.write(`${html}</html>`);
    },
    async (err, s) => {
      const requestId = c.get("requestId");
      console.error(JSON.stringify({ requestId, error: String(err) }));
      const failed = (
        <AuthBody>
          <h1>Something went wrong</h1>
          <p>Our side failed (request {requestId}); try again.</p>
          <p>
            <a href="/app">Back to your pods</a>
          </p>
        </AuthBody>
      );
      await s.write(`${await failed.toString()}</html>`);
    },
  );
}
