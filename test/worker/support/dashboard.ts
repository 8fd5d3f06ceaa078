import { exports } from "cloudflare:workers";
import { freshIp, registerUser, type TestUser } from "./client";

/** wrangler.toml's PUBLIC_URL: the dashboard answers only on the API's own host. */
export const DASHBOARD_ORIGIN = "http://localhost:8787";

export interface PageReply {
  status: number;
  text: string;
  headers: Headers;
}

/** A dashboard page as a browser fetches it: the session cookie, a top-level navigation. */
export async function page(
  path: string,
  opts: { session?: string; host?: string; headers?: Record<string, string> } = {},
): Promise<PageReply> {
  const headers: Record<string, string> = {
    "cf-connecting-ip": freshIp(),
    "sec-fetch-site": "same-origin",
    ...opts.headers,
  };
  if (opts.session) headers.cookie = `pod_session=${opts.session}`;
  const origin = opts.host ? `http://${opts.host}` : DASHBOARD_ORIGIN;
  const res = await exports.default.fetch(new Request(`${origin}${path}`, { headers, redirect: "manual" }));
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** A registered user and their session, for pages behind sign-in. */
export async function signedIn(name = "Dash User"): Promise<TestUser & { session: string }> {
  const user = await registerUser(name);
  return { ...user, session: user.token };
}
