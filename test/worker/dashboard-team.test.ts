import { describe, expect, it } from "vitest";
import { call, registerUser } from "./support/client";
import { page, signedIn } from "./support/dashboard";

describe("the team and account pages", () => {
  it("shows the team's members, and the owner its pending invitations with their link", async () => {
    const owner = await signedIn("Team Owner");
    const teamId = owner.user.active_team_id;
    const invite = await call(
      "POST",
      `/api/teams/${teamId}/invitations`,
      { email: "new-mate@example.test", role: "member" },
      { token: owner.token },
    );
    expect(invite.status).toBe(201);
    const res = await page("/app/team", { session: owner.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain(owner.user.email);
    expect(res.text).toContain("new-mate@example.test");
    expect(res.text).toContain(`/app/invitations/${invite.body.token}`);
    expect(res.text).toContain(`data-api="/api/teams/${teamId}/invitations"`);
  });

  it("shows a member neither the invitations nor their tokens", async () => {
    const owner = await signedIn("Owner Two");
    const teamId = owner.user.active_team_id;
    const mate = await registerUser("Mate");
    const invite = await call(
      "POST",
      `/api/teams/${teamId}/invitations`,
      { email: mate.user.email, role: "member" },
      { token: owner.token },
    );
    expect(
      (await call("POST", "/api/invitations/accept", { token: invite.body.token }, { token: mate.token }))
        .status,
    ).toBe(200);
    expect((await call("POST", "/api/teams/switch", { team_id: teamId }, { token: mate.token })).status).toBe(
      200,
    );
    const pending = await call(
      "POST",
      `/api/teams/${teamId}/invitations`,
      { email: "other@example.test", role: "member" },
      { token: owner.token },
    );
    const res = await page("/app/team", { session: mate.token });
    expect(res.text).toContain("Owner Two");
    expect(res.text).not.toContain("other@example.test");
    expect(res.text).not.toContain(pending.body.token);
    expect(res.text).toContain(">Leave<");
  });

  it("lists API tokens by prefix only, never their value", async () => {
    const user = await signedIn();
    const created = await call("POST", "/api/api-tokens", { name: "ci <b>bold</b>" }, { token: user.token });
    expect(created.status).toBe(201);
    const res = await page("/app/account", { session: user.session });
    expect(res.text).toContain(`${created.body.prefix}…`);
    expect(res.text).not.toContain(created.body.token);
    expect(res.text).toContain("ci &lt;b&gt;bold&lt;/b&gt;");
    expect(res.text).toContain('data-then="show:token"');
  });

  it("shows the account's SSH keys with their fingerprint", async () => {
    const user = await signedIn();
    const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl laptop";
    const added = await call("POST", "/api/ssh-keys", { public_key: key }, { token: user.token });
    expect(added.status).toBe(201);
    const res = await page("/app/account", { session: user.session });
    expect(res.text).toContain(added.body.fingerprint);
    expect(res.text).toContain("Off: turn on");
  });

  it("sends a signed-out browser to sign-in", async () => {
    for (const path of ["/app/team", "/app/account"]) {
      const res = await page(path);
      expect(res.status, path).toBe(302);
    }
  });
});
