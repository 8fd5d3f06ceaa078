import { request } from "node:http";

export interface HttpResult {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * GET through the ingress with a Host header (fetch cannot set Host). Node's agent keeps
 * connections alive; when nginx closes an idle one (its old workers do at every reload) just as a
 * request goes out on it, that request is sent again once, as browsers do and Node's docs advise
 * (`reusedSocket` and ECONNRESET): the race is the client's, and says nothing about the pod.
 * `headers` go beside Host (the edge's proof: test/support/edge.ts).
 */
export async function httpGet(
  port: number,
  host: string,
  path = "/",
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  try {
    return await httpGetOnce(port, host, path, headers);
  } catch (err) {
    if ((err as { reusedSocket?: boolean }).reusedSocket) return httpGetOnce(port, host, path, headers);
    throw err;
  }
}

function httpGetOnce(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string>,
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const options = { host: "127.0.0.1", port, path, headers: { ...headers, host }, timeout: 10_000 };
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("utf8"),
          headers: res.headers,
        }),
      );
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) =>
      reject(
        req.reusedSocket && err.code === "ECONNRESET" ? Object.assign(err, { reusedSocket: true }) : err,
      ),
    );
    req.end();
  });
}
