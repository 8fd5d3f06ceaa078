import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env as baseEnv, exports } from "cloudflare:workers";
import worker from "../../../worker";

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** Test files run side by side against the same Durable Objects: a random tag per file keeps their keys apart. */
const fileTag = crypto.randomUUID().slice(0, 8);

let ipCounter = 0;
/**
 * A fresh client IP per call site, so rate limits of one test never leak into another (nor another
 * file's): a /64 of its own (per-IP limits count an IPv6 address by its /64), the file's tag in the
 * first 48 bits (a ULA, fd00::/8), the call's number in the next 16.
 */
export const freshIp = () =>
  `fd${fileTag.slice(0, 2)}:${fileTag.slice(2, 6)}:${fileTag.slice(6)}00:${(++ipCounter % 0x10000).toString(16)}::1`;

export interface CallOptions {
  token?: string;
  cookie?: string;
  ip?: string;
  headers?: Record<string, string>;
  /** a raw body, sent as is (for malformed JSON and size tests) */
  raw?: string;
  /** bindings to change for this request only (billing tests turn the processor key on this way) */
  env?: Partial<Cloudflare.Env>;
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
  const request = new Request(`http://localhost${path}`, { method, headers, body: payload });
  const res = opts.env ? await fetchWithEnv(request, opts.env) : await exports.default.fetch(request);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (the docs page): keep the text
  }
  if (res.status >= 400) assertErrorBody(method, path, res.status, parsed);
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** The Worker's fetch handler called directly, with some bindings overridden for this request. */
async function fetchWithEnv(request: Request, overrides: Partial<Cloudflare.Env>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request, { ...baseEnv, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** The extra fields the spec allows beside `error` (contract: "plus the extra fields the spec names"). */
const SPEC_ERROR_EXTRAS = new Set([
  "guide",
  "ssh_ready",
  "deps_output",
  "hosted_invoice_url",
  "unpaid_invoices",
]);

/** Every error of every test is checked for the one shape: `{error: string}` plus only spec-named fields. */
function assertErrorBody(method: string, path: string, status: number, body: unknown) {
  const fields = body && typeof body === "object" ? Object.keys(body) : [];
  const error = (body as { error?: unknown } | undefined)?.error;
  if (typeof error !== "string" || fields.some((f) => f !== "error" && !SPEC_ERROR_EXTRAS.has(f))) {
    throw new Error(
      `${method} ${path} answered ${status} with a body not shaped {error}: ${JSON.stringify(body)}`,
    );
  }
}

let userCounter = 0;
export const uniqueEmail = (tag = "user") => `${tag}-${fileTag}-${++userCounter}@example.test`;

/** A name no other test uses, for assertions on slugs derived from it. */
export const uniqueName = (base: string) => `${base} ${fileTag}${++userCounter}`;

export const PASSWORD = "correct horse battery";

export interface TestUser {
  token: string;
  user: { id: string; email: string; name: string; email_verified: boolean; active_team_id: string };
  password: string;
}

export async function registerUser(name = "Ada Lovelace", email = uniqueEmail()): Promise<TestUser> {
  const res = await call("POST", "/api/auth/register", { email, password: PASSWORD, name });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...res.body, password: PASSWORD };
}

let shared: Promise<TestUser> | undefined;
/**
 * One account per test file for requests that change nothing it is asserted on (validation
 * failures, odd inputs): registration is the expensive step of most tests.
 */
export const sharedUser = () => {
  shared ??= registerUser("Shared User");
  return shared;
};

/** A second session for an existing account. */
export async function login(email: string, password = PASSWORD): Promise<string> {
  const res = await call("POST", "/api/auth/login", { email, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token;
}

/** The `pod_session` Set-Cookie line of a reply, or undefined. */
export const sessionSetCookie = (reply: Reply) =>
  reply.headers.getAll("set-cookie").find((line) => line.startsWith("pod_session="));

/** `pod_session=<value>` ready for a Cookie header. */
export function sessionCookie(reply: Reply): string {
  const line = sessionSetCookie(reply);
  if (!line) throw new Error("no pod_session cookie in the reply");
  return line.split(";")[0] ?? "";
}
