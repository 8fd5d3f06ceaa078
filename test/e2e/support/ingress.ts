import { request } from "node:http";

/** GET through the host's ingress with a given Host header, as a browser resolving the pod's domain would. */
export function getThroughIngress(
  port: number,
  host: string,
  path = "/",
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error("ingress request timed out")));
    req.end();
  });
}
