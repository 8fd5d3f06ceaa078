import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A DNS-over-HTTPS double for the Worker's DNS_RESOLVER_URL: the JSON API Cloudflare's 1.1.1.1 and
 * Google's dns.google speak (`GET /dns-query?name=…&type=TXT` with `accept: application/dns-json`,
 * answering `{Status, Answer: [{name, type: 16, TTL, data: "\"…\""}]}`; Status 3, NXDOMAIN, for a
 * name it has nothing for). Only TXT records exist here.
 *
 * Tests in workerd cannot share its memory, so the table is filled over HTTP:
 * `PUT /__double/txt/<name>` with `{"values": ["…"]}` sets the name's TXT strings (`[]` or
 * `DELETE` removes them), `/__double/a/<name>` and `/__double/aaaa/<name>` its addresses (imports'
 * SSRF checks); `POST /__double/fail/<name>` makes lookups of the name answer SERVFAIL
 * (Status 2). `GET /__double/queries` lists the names looked up, in order.
 */

export interface DnsDouble {
  url: string;
  /** what DNS_RESOLVER_URL is set to */
  resolverUrl: string;
  /** fill the table from Node (agent and e2e tests) */
  setTxt(name: string, values: string[]): void;
  close(): Promise<void>;
}

const TXT = 16;
const A = 1;
const AAAA = 28;

/** A TXT string as DNS-over-HTTPS shows it: quoted, split into 255-byte character strings. */
const quoted = (value: string): string => {
  const parts: string[] = [];
  for (let i = 0; i < value.length || parts.length === 0; i += 255) parts.push(value.slice(i, i + 255));
  return parts.map((p) => `"${p.replace(/(["\\])/g, "\\$1")}"`).join(" ");
};

const canonical = (name: string) => name.toLowerCase().replace(/\.$/, "");

export async function startDnsDouble(): Promise<DnsDouble> {
  const txt = new Map<string, string[]>();
  const addresses = { a: new Map<string, string[]>(), aaaa: new Map<string, string[]>() };
  const failing = new Set<string>();
  const queries: string[] = [];

  const json = (res: ServerResponse, status: number, body: unknown, type = "application/json") => {
    res.writeHead(status, { "content-type": type });
    res.end(JSON.stringify(body));
  };

  const readBody = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://double");
    const control = url.pathname.match(/^\/__double\/(txt|fail|a|aaaa)\/(.+)$/);
    if (control) {
      const name = canonical(decodeURIComponent(control[2] ?? ""));
      if (control[1] === "a" || control[1] === "aaaa") {
        const table = addresses[control[1]];
        const body = JSON.parse((await readBody(req)) || "{}") as { values?: unknown };
        const values = Array.isArray(body.values) ? body.values.map(String) : [];
        if (req.method === "DELETE" || values.length === 0) table.delete(name);
        else table.set(name, values);
        return json(res, 200, { ok: true });
      }
      if (control[1] === "fail") {
        failing.add(name);
        return json(res, 200, { ok: true });
      }
      if (req.method === "DELETE") {
        txt.delete(name);
        return json(res, 200, { ok: true });
      }
      const body = JSON.parse((await readBody(req)) || "{}") as { values?: unknown };
      const values = Array.isArray(body.values) ? body.values.map(String) : [];
      if (values.length === 0) txt.delete(name);
      else txt.set(name, values);
      return json(res, 200, { ok: true });
    }
    if (url.pathname === "/__double/queries") return json(res, 200, queries);
    if (url.pathname !== "/dns-query" || req.method !== "GET") return json(res, 404, { error: "not found" });
    if (!(req.headers.accept ?? "").includes("application/dns-json"))
      return json(res, 415, { error: "accept: application/dns-json expected" });
    const name = canonical(url.searchParams.get("name") ?? "");
    const type = url.searchParams.get("type") ?? "A";
    queries.push(name);
    const question = [{ name: `${name}.`, type: type === "TXT" ? TXT : 1 }];
    const flags = { TC: false, RD: true, RA: true, AD: false, CD: false };
    if (failing.has(name))
      return json(res, 200, { Status: 2, ...flags, Question: question }, "application/dns-json");
    if (type === "A" || type === "AAAA") {
      const list = (type === "A" ? addresses.a : addresses.aaaa).get(name);
      const all = addresses.a.has(name) || addresses.aaaa.has(name) || txt.has(name);
      const rr = type === "A" ? A : AAAA;
      return json(
        res,
        200,
        {
          Status: all ? 0 : 3,
          ...flags,
          Question: [{ name: `${name}.`, type: rr }],
          Answer: (list ?? []).map((v) => ({ name: `${name}.`, type: rr, TTL: 300, data: v })),
        },
        "application/dns-json",
      );
    }
    const values = type === "TXT" || type === "16" ? txt.get(name) : undefined;
    if (!values) return json(res, 200, { Status: 3, ...flags, Question: question }, "application/dns-json");
    return json(
      res,
      200,
      {
        Status: 0,
        ...flags,
        Question: question,
        Answer: values.map((v) => ({ name: `${name}.`, type: TXT, TTL: 300, data: quoted(v) })),
      },
      "application/dns-json",
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    resolverUrl: `${url}/dns-query`,
    setTxt: (name, values) => {
      if (values.length === 0) txt.delete(canonical(name));
      else txt.set(canonical(name), values);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
