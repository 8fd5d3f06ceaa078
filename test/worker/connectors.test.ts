import { describe, expect, it } from "vitest";
import { call, registerUser } from "./support/client";
import { connect } from "./support/connectors";

describe("connector sessions through OAuth", () => {
  it("registers, authorizes with PKCE, consents and gets a token that acts as the user on the active team", async () => {
    const u = await registerUser();
    const c = await connect(u);
    expect(c.expiresIn).toBe(30 * 86_400);
    const me = await call("GET", "/api/auth/user", undefined, { token: c.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.user.id);
  });
});
