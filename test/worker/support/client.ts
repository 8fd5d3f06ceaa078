import { exports } from "cloudflare:workers";

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

let ipCounter = 0;
/** A fresh client IP per call site, so rate limits of one test never leak into another. */
export const freshIp = () => `10.1.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`;

export interface CallOptions {
  token?: string;
  cookie?: string;
  ip?: string;
  headers?: Record<string, string>;
  /** a raw body, sent as is (for malformed JSON and size tests) */
  raw?: string;
}

/** One request through the Worker's real fetch handler, as a client would send it. */
export async function call<T = any>(
  method: string,
  path: string,
  body?: unknown,
  opts: CallOptions = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { "cf-connecting-ip": opts.ip ?? freshIp(), ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  let payload: string | undefined = opts.raw;
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  } else if (opts.raw !== undefined) {
    headers["content-type"] ??= "application/json";
  }
  const res = await exports.default.fetch(
    new Request(`http://localhost${path}`, { method, headers, body: payload }),
  );
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (the docs page): keep the text
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

let userCounter = 0;
export const uniqueEmail = (tag = "user") =>
  `${tag}-${Date.now().toString(36)}-${++userCounter}@example.test`;

export interface TestUser {
  token: string;
  user: { id: string; email: string; name: string; active_team_id: string };
  password: string;
}

export async function registerUser(name = "Ada Lovelace", email = uniqueEmail()): Promise<TestUser> {
  const password = "correct horse battery";
  const res = await call("POST", "/api/auth/register", { email, password, name });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...res.body, password };
}
