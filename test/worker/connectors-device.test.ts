import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, freshIp, registerUser, type TestUser } from "./support/client";
import { BASE, raw, registerClient } from "./support/connectors";

/**
 * The device login (RFC 8628, docs/connectors.md#device-login): `podhost login --device` gets a code,
 * a signed-in user types it on /device and allows it, the device's poll of /oauth/token gets tokens.
 */

const FORM = "application/x-www-form-urlencoded";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

async function startDevice(clientId: string, ip = freshIp()) {
  const res = await raw("/oauth/device_authorization", {
    method: "POST",
    headers: { "content-type": FORM, "cf-connecting-ip": ip },
    body: form({ client_id: clientId }),
  });
  return res;
}

const poll = (clientId: string, deviceCode: string) =>
  raw("/oauth/token", {
    method: "POST",
    headers: { "content-type": FORM },
    body: form({ grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: clientId }),
  });

/** The interval between polls has passed (instead of waiting five seconds). */
const intervalPassed = () => env.DB.prepare("UPDATE device_authorizations SET last_polled_at = NULL").run();

/** Posts the device page's form as the page itself would (same origin), from its own IP unless given. */
const postDevice = (
  user: TestUser,
  fields: Record<string, string>,
  opts: { origin?: string; ip?: string } = {},
) =>
  raw("/device", {
    method: "POST",
    headers: {
      "content-type": FORM,
      cookie: `pod_session=${user.token}`,
      origin: opts.origin ?? BASE,
      "cf-connecting-ip": opts.ip ?? freshIp(),
    },
    body: form(fields),
  });

async function deviceClient() {
  const clientId = await registerClient("podhost CLI", "http://127.0.0.1/podhost-device");
  const started = await startDevice(clientId);
  expect(started.status, started.text).toBe(200);
  return { clientId, ...(started.json as { device_code: string; user_code: string; interval: number }) };
}

describe("device login (RFC 8628)", () => {
  it("is advertised in the authorization server's metadata", async () => {
    const res = await raw("/.well-known/oauth-authorization-server");
    expect(res.json.device_authorization_endpoint).toBe(`${BASE}/oauth/device_authorization`);
    expect(res.json.grant_types_supported).toContain(DEVICE_GRANT);
  });

  it("a code confirmed in a signed-in browser gives the device a token that acts as the user, once", async () => {
    const u = await registerUser();
    const { clientId, device_code, user_code, interval } = await deviceClient();
    expect(user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(interval).toBe(5);

    // before the user confirms: pending, and a poll sooner than the interval is told to slow down
    expect((await poll(clientId, device_code)).json.error).toBe("authorization_pending");
    expect((await poll(clientId, device_code)).json.error).toBe("slow_down");

    // the page: signed out it asks to sign in first; signed in it takes the code (any case, no dash)
    const signedOut = await raw(`/device?user_code=${user_code}`);
    expect(signedOut.text).toContain('action="/device"');
    const page = await raw(`/device?user_code=${user_code}`, {
      headers: { cookie: `pod_session=${u.token}` },
    });
    expect(page.status).toBe(200);
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const shown = await postDevice(u, {
      intent: "lookup",
      user_code: user_code.replace("-", "").toLowerCase(),
    });
    expect(shown.status).toBe(200);
    expect(shown.text).toContain("podhost CLI");
    expect(shown.text).toContain(user_code);
    const approved = await postDevice(u, { intent: "decide", user_code, decision: "approve" });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.text).toContain("Device connected");

    await intervalPassed();
    const tokens = await poll(clientId, device_code);
    expect(tokens.status, tokens.text).toBe(200);
    expect(tokens.json).toMatchObject({ token_type: "bearer", team_id: u.user.active_team_id });
    expect(tokens.json.connector_id).toMatch(/^cng_/);
    const me = await call("GET", "/api/auth/user", undefined, { token: tokens.json.access_token });
    expect(me.body.id).toBe(u.user.id);

    // the device code is spent: a second exchange is refused, and the code cannot be approved again
    await intervalPassed();
    expect((await poll(clientId, device_code)).json.error).toBe("invalid_grant");
    const again = await postDevice(u, { intent: "decide", user_code, decision: "approve" });
    expect(again.status).toBe(400);
    expect(again.text).toContain("unknown, expired or already used");

    // the login revokes itself (podhost logout): its token is 401 from then on
    const revoked = await call("DELETE", `/api/connectors/${tokens.json.connector_id}`, undefined, {
      token: tokens.json.access_token,
    });
    expect(revoked.status).toBe(200);
    expect((await call("GET", "/api/auth/user", undefined, { token: tokens.json.access_token })).status).toBe(
      401,
    );
  });

  it("a denied code answers access_denied and grants nothing", async () => {
    const u = await registerUser();
    const { clientId, device_code, user_code } = await deviceClient();
    const denied = await postDevice(u, { intent: "decide", user_code, decision: "deny" });
    expect(denied.text).toContain("Device refused");
    expect((await poll(clientId, device_code)).json.error).toBe("access_denied");
    const grants = await call("GET", "/api/connectors", undefined, { token: u.token });
    expect(grants.body.connectors).toEqual([]);
  });
});

describe("device login (attacker cases)", () => {
  it("an expired code can be neither confirmed nor exchanged", async () => {
    const u = await registerUser();
    const { clientId, device_code, user_code } = await deviceClient();
    await env.DB.prepare("UPDATE device_authorizations SET expires_at = ? WHERE user_code = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user_code.replace("-", ""))
      .run();
    const shown = await postDevice(u, { intent: "lookup", user_code });
    expect(shown.status).toBe(400);
    const approved = await postDevice(u, { intent: "decide", user_code, decision: "approve" });
    expect(approved.status).toBe(400);
    expect((await poll(clientId, device_code)).json.error).toBe("expired_token");
  });

  it("a cross-site post of the confirmation is refused (403) and grants nothing", async () => {
    const u = await registerUser();
    const { clientId, device_code, user_code } = await deviceClient();
    const forged = await postDevice(
      u,
      { intent: "decide", user_code, decision: "approve" },
      { origin: "https://evil.example" },
    );
    expect(forged.status).toBe(403);
    const viaFetchMetadata = await raw("/device", {
      method: "POST",
      headers: { "content-type": FORM, cookie: `pod_session=${u.token}`, "sec-fetch-site": "cross-site" },
      body: form({ intent: "decide", user_code, decision: "approve" }),
    });
    expect(viaFetchMetadata.status).toBe(403);
    expect((await poll(clientId, device_code)).json.error).toBe("authorization_pending");
  });

  it("guessing codes is limited per IP and per account (429)", async () => {
    const u = await registerUser();
    const ip = freshIp();
    for (let i = 0; i < 10; i++) {
      const res = await postDevice(u, { intent: "lookup", user_code: "BBBB-BBBB" }, { ip });
      expect(res.status).toBe(400);
    }
    expect((await postDevice(u, { intent: "lookup", user_code: "BBBB-BBBC" }, { ip })).status).toBe(429);
    // from fresh addresses the same account is still held to its own limit
    const other = await postDevice(u, { intent: "lookup", user_code: "BBBB-BBBD" });
    expect(other.status).toBe(429);
    expect(other.text).toContain("per account");
  });

  it("a device code of another client, an unknown one, or no client is refused", async () => {
    const { device_code } = await deviceClient();
    const other = await registerClient("other", "http://127.0.0.1/other");
    expect((await poll(other, device_code)).json.error).toBe("invalid_grant");
    expect((await poll(other, "made-up")).json.error).toBe("invalid_grant");
    const unknown = await startDevice("no-such-client");
    expect(unknown.status).toBe(401);
    expect(unknown.json.error).toBe("invalid_client");
    const started = await raw("/oauth/device_authorization", {
      method: "POST",
      headers: { "content-type": FORM },
      body: "",
    });
    expect(started.status).toBe(400);
    expect(started.json.error).toBe("invalid_request");
  });

  it("starting device logins is limited per IP (each stores a row)", async () => {
    const clientId = await registerClient("flood", "http://127.0.0.1/flood");
    const ip = freshIp();
    for (let i = 0; i < 10; i++) expect((await startDevice(clientId, ip)).status).toBe(200);
    expect((await startDevice(clientId, ip)).status).toBe(429);
  });
});
