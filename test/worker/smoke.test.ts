import { describe, expect, it } from "vitest";
import { call, registerUser } from "./support/client";

describe("smoke", () => {
  it("serves health and registers", async () => {
    expect((await call("GET", "/health")).status).toBe(200);
    const u = await registerUser();
    const me = await call("GET", "/api/auth/user", undefined, { token: u.token });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(u.user.email);
  });
});
