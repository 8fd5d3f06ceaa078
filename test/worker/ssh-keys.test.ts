import { describe, expect, it } from "vitest";
import { parsePublicKey } from "../../worker/services/ssh-keys/public-key";
import { call, registerUser, sharedUser, type TestUser } from "./support/client";
import { first } from "./support/db";
import { documentedOperations } from "./support/openapi";
import { KEYS, PRIVATE_KEY } from "./support/ssh-keys";
import { createTeam } from "./support/teams";

const RECORD_KEYS = ["auto_inject", "created_at", "fingerprint", "id", "name", "public_key", "user_id"];

/** SSH wire format (uint32 length + bytes per field), to build blobs no ssh-keygen would make. */
function wire(...fields: (string | number[] | Uint8Array)[]): string {
  const parts = fields.map((f) => (typeof f === "string" ? new TextEncoder().encode(f) : Uint8Array.from(f)));
  const out = new Uint8Array(parts.reduce((n, p) => n + 4 + p.length, 0));
  let at = 0;
  for (const p of parts) {
    new DataView(out.buffer).setUint32(at, p.length);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  return btoa(String.fromCharCode(...out));
}
const bytes = (length: number, fill: number, head: number[] = []) => [
  ...head,
  ...new Array<number>(length - head.length).fill(fill),
];
const blobOf = (line: string) => Uint8Array.from(atob(line.split(" ")[1] ?? ""), (c) => c.charCodeAt(0));
const reencode = (blob: Uint8Array) => btoa(String.fromCharCode(...blob));

const VALID = [
  ["ed25519", KEYS.ed25519, "ada@laptop"],
  ["RSA 2048", KEYS.rsa2048, "rsa2048@ci"],
  ["RSA 4096 without a comment", KEYS.rsa4096, ""],
  ["ECDSA P-256 with spaces in its comment", KEYS.ecdsa256, "ec256 with spaces in comment"],
  ["ECDSA P-384", KEYS.ecdsa384, "ec384@host"],
  ["ECDSA P-521", KEYS.ecdsa521, "ec521@host"],
] as const;

describe("parsePublicKey", () => {
  it.each(VALID)("accepts %s with the fingerprint and size ssh-keygen -l prints", async (_, key, comment) => {
    const parsed = await parsePublicKey(key.line);
    if (!parsed.ok) throw new Error(parsed.message);
    expect(parsed.value.fingerprint).toBe(key.fingerprint);
    expect(parsed.value.bits).toBe(key.bits);
    expect(parsed.value.comment).toBe(comment);
    expect(parsed.value.normalized).toBe(key.line.trim());
  });

  it("normalizes whitespace: tabs, repeated spaces, a trailing newline, CRLF", async () => {
    const [type, data] = KEYS.ed25519.line.split(" ");
    const parsed = await parsePublicKey(`  ${type}\t${data}   ada   at  laptop \r\n`);
    expect(parsed).toMatchObject({ ok: true, value: { normalized: `${type} ${data} ada at laptop` } });
  });

  const ed = KEYS.ed25519.line.split(" ")[1] ?? "";
  const edBlob = blobOf(KEYS.ed25519.line);
  const point256 = blobOf(KEYS.ecdsa256.line).slice(-65);
  const invalid: [string, string, RegExp][] = [
    ["an empty string", "   ", /is empty/],
    ["RSA 1024", KEYS.rsa1024.line, /1024 bits; at least 2048/],
    ["RSA 2047 bits", `ssh-rsa ${wire("ssh-rsa", [1, 0, 1], bytes(256, 0xff, [0x7f]))}`, /2047 bits/],
    ["DSA", KEYS.dsa.line, /DSA keys \(ssh-dss\) are not accepted/],
    [
      "a security-key type",
      `sk-ssh-ed25519@openssh.com ${ed} yubi`,
      /"sk-ssh-ed25519@openssh.com" is not supported/,
    ],
    ["a certificate", `ssh-ed25519-cert-v01@openssh.com ${ed}`, /is not supported/],
    ["something else entirely", "hello world", /not an OpenSSH public key/],
    ["garbage base64", "ssh-ed25519 AAAA!!!notbase64 x", /not valid base64/],
    ["base64 of the wrong length", `ssh-ed25519 ${ed.slice(0, -1)}`, /not valid base64/],
    ["a missing blob", "ssh-ed25519", /key data \(base64\) after "ssh-ed25519" is missing/],
    [
      "a type that does not match the blob",
      `ssh-rsa ${ed} mixed`,
      /line says "ssh-rsa" but the key data is a "ssh-ed25519" key/,
    ],
    ["a truncated blob", `ssh-ed25519 ${reencode(edBlob.slice(0, -4))}`, /malformed: it ends before the key/],
    [
      "bytes after the key",
      `ssh-ed25519 ${reencode(Uint8Array.from([...edBlob, 0, 0, 0, 0]))}`,
      /unexpected bytes/,
    ],
    [
      "an ed25519 key of 31 bytes",
      `ssh-ed25519 ${wire("ssh-ed25519", bytes(31, 7))}`,
      /32 bytes, this one is 31/,
    ],
    [
      "a blob that is not a wire string",
      `ssh-ed25519 ${btoa("just some text")}`,
      /not an SSH public key blob/,
    ],
    [
      "a negative RSA modulus",
      `ssh-rsa ${wire("ssh-rsa", [1, 0, 1], bytes(256, 1, [0x80]))}`,
      /must be positive/,
    ],
    [
      "an ECDSA key naming another curve",
      `ecdsa-sha2-nistp256 ${wire("ecdsa-sha2-nistp256", "nistp384", point256)}`,
      /curve is "nistp384"/,
    ],
    [
      "an ECDSA point of the wrong length",
      `ecdsa-sha2-nistp384 ${wire("ecdsa-sha2-nistp384", "nistp384", point256)}`,
      /97 bytes, uncompressed/,
    ],
    [
      "an ECDSA point off the curve",
      `ecdsa-sha2-nistp256 ${wire("ecdsa-sha2-nistp256", "nistp256", bytes(65, 1, [4]))}`,
      /not on curve nistp256/,
    ],
    ["a private key", PRIVATE_KEY, /private key; never share it/],
    ["a PuTTY private key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none", /private key/],
    [
      "an RFC 4716 public key",
      `---- BEGIN SSH2 PUBLIC KEY ----\n${ed}\n---- END SSH2 PUBLIC KEY ----`,
      /ssh-keygen -i/,
    ],
    [
      "two keys on two lines",
      `${KEYS.ed25519.line}\n${KEYS.ed25519Other.line}`,
      /exactly one key on one line; found 2 lines/,
    ],
    [
      "two keys on one line",
      `${KEYS.ed25519.line} ${KEYS.ed25519Other.line}`,
      /a second key follows the first/,
    ],
    ["an options prefix", `command="uptime",no-pty ${KEYS.ed25519.line}`, /options before the key/],
    ["a comment with control characters", `${KEYS.ed25519.line}\u0007bell`, /control characters/],
  ];

  it.each(invalid)("refuses %s, saying why", async (_, input, reason) => {
    const parsed = await parsePublicKey(input, "public_key");
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.code).toBe("bad_request");
    expect(parsed.message).toMatch(/^public_key: /);
    expect(parsed.message).toMatch(reason);
  });

  it("counts RSA modulus bits past the mpint's leading zero byte: exactly 2048 passes", async () => {
    const key = `ssh-rsa ${wire("ssh-rsa", [1, 0, 1], bytes(257, 0xab, [0x00, 0x80]))}`;
    expect(await parsePublicKey(key)).toMatchObject({ ok: true, value: { bits: 2048 } });
  });
});

async function addKey(user: TestUser, body: Record<string, unknown>) {
  const res = await call("POST", "/api/ssh-keys", body, { token: user.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as {
    id: string;
    name: string;
    public_key: string;
    fingerprint: string;
    auto_inject: boolean;
  };
}
const listKeys = async (user: TestUser) =>
  (await call("GET", "/api/ssh-keys", undefined, { token: user.token })).body as { id: string }[];

describe("POST /api/ssh-keys", () => {
  it("answers 201 with the stored key; the list shows the same record", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/ssh-keys", { public_key: KEYS.ed25519.line }, { token: u.token });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(RECORD_KEYS);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^key_[0-9a-z]{20}$/),
      user_id: u.user.id,
      name: "ada@laptop",
      public_key: KEYS.ed25519.line,
      fingerprint: KEYS.ed25519.fingerprint,
      auto_inject: false,
    });
    expect(Math.abs(Date.parse(res.body.created_at) - Date.now())).toBeLessThan(60_000);
    expect(await listKeys(u)).toEqual([res.body]);
  });

  it.each(VALID)("accepts %s with its fingerprint", async (_, key, comment) => {
    const u = await sharedUser();
    const created = await addKey(u, { public_key: `${key.line}\n` });
    expect(created.fingerprint).toBe(key.fingerprint);
    expect(created.public_key).toBe(key.line.trim());
    expect(created.name).toBe(comment || "rsa 4096 key");
    await call("DELETE", `/api/ssh-keys/${created.id}`, undefined, { token: u.token });
  });

  it("names a key without a comment after its type, and takes a given name and auto_inject", async () => {
    const u = await registerUser();
    const [type, data] = KEYS.ed25519.line.split(" ");
    expect((await addKey(u, { public_key: `${type} ${data}` })).name).toBe("ed25519 key");
    const ecdsa = KEYS.ecdsa384.line.split(" ").slice(0, 2).join(" ");
    expect((await addKey(u, { public_key: ecdsa })).name).toBe("ecdsa 384 key");
    const named = await addKey(u, {
      public_key: KEYS.rsa2048.line,
      name: "  CI deploy  ",
      auto_inject: true,
    });
    expect(named).toMatchObject({ name: "CI deploy", auto_inject: true });
  });

  it.each([
    ["RSA 1024", { public_key: KEYS.rsa1024.line }, /public_key: .*2048/],
    ["DSA", { public_key: KEYS.dsa.line }, /public_key: DSA/],
    ["garbage base64", { public_key: "ssh-ed25519 %%%% me" }, /public_key: .*base64/],
    [
      "a type mismatch",
      { public_key: `ssh-rsa ${KEYS.ed25519.line.split(" ")[1]}` },
      /public_key: .*ssh-ed25519/,
    ],
    ["a private key", { public_key: PRIVATE_KEY }, /public_key: .*private key/],
    ["two keys", { public_key: `${KEYS.ed25519.line}\n${KEYS.rsa2048.line}` }, /public_key: .*one key/],
    ["a missing public_key", {}, /public_key: is required/],
    ["a numeric public_key", { public_key: 42 }, /public_key/],
    ["an empty name", { public_key: KEYS.ed25519.line, name: " " }, /name/],
    ["a 101-character name", { public_key: KEYS.ed25519.line, name: "n".repeat(101) }, /name/],
    ["auto_inject as a string", { public_key: KEYS.ed25519.line, auto_inject: "yes" }, /auto_inject/],
  ])("answers 400 for %s, stores nothing", async (_, body, error) => {
    const u = await sharedUser();
    const before = await listKeys(u);
    const res = await call("POST", "/api/ssh-keys", body, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(error) });
    expect(await listKeys(u)).toEqual(before);
  });

  it("answers 409 for a fingerprint already on the account, even under another comment", async () => {
    const u = await registerUser();
    const created = await addKey(u, { public_key: KEYS.ed25519.line, name: "laptop" });
    const [type, data] = KEYS.ed25519.line.split(" ");
    for (const again of [KEYS.ed25519.line, `${type} ${data} other comment`, `${type} ${data}`]) {
      const res = await call("POST", "/api/ssh-keys", { public_key: again }, { token: u.token });
      expect(res.status, again).toBe(409);
      expect(res.body.error).toContain(KEYS.ed25519.fingerprint);
      expect(res.body.error).toContain('"laptop"');
    }
    expect(await listKeys(u)).toEqual([expect.objectContaining({ id: created.id })]);
  });

  it("lets another user add the same key", async () => {
    const [a, b] = await Promise.all([registerUser(), registerUser()]);
    const ka = await addKey(a, { public_key: KEYS.ed25519.line });
    const kb = await addKey(b, { public_key: KEYS.ed25519.line });
    expect(kb.fingerprint).toBe(ka.fingerprint);
    expect(kb.id).not.toBe(ka.id);
  });

  it("stores one row when the same key is added twice at once", async () => {
    const u = await registerUser();
    const replies = await Promise.all(
      [0, 1, 2].map(() =>
        call("POST", "/api/ssh-keys", { public_key: KEYS.ecdsa256.line }, { token: u.token }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect(await listKeys(u)).toHaveLength(1);
  });
});

describe("GET /api/ssh-keys", () => {
  it("lists the caller's keys newest first, whichever team is active and however the caller signs in", async () => {
    const u = await registerUser();
    expect(await listKeys(u)).toEqual([]);
    const older = await addKey(u, { public_key: KEYS.ed25519.line });
    const newer = await addKey(u, { public_key: KEYS.rsa2048.line });
    expect((await listKeys(u)).map((k) => k.id)).toEqual([newer.id, older.id]);

    const team = await createTeam(u);
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: u.token });
    expect((await listKeys(u)).map((k) => k.id)).toEqual([newer.id, older.id]);
  });

  it("answers 401 without credentials", async () => {
    expect((await call("GET", "/api/ssh-keys")).status).toBe(401);
    expect((await call("POST", "/api/ssh-keys", { public_key: KEYS.ed25519.line })).status).toBe(401);
  });
});

describe("PUT /api/ssh-keys/{id}", () => {
  it("renames and toggles auto_inject; fields left out stay as they are", async () => {
    const u = await registerUser();
    const key = await addKey(u, { public_key: KEYS.ed25519.line });
    const put = (body: unknown) => call("PUT", `/api/ssh-keys/${key.id}`, body, { token: u.token });

    const renamed = await put({ name: "work laptop" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...key, name: "work laptop" });
    const injected = await put({ auto_inject: true });
    expect(injected.body).toEqual({ ...key, name: "work laptop", auto_inject: true });
    const both = await put({ name: "old laptop", auto_inject: false });
    expect(both.body).toEqual({ ...key, name: "old laptop", auto_inject: false });
    const nothing = await put({});
    expect(nothing.status).toBe(200);
    expect(nothing.body).toEqual(both.body);
    expect(await listKeys(u)).toEqual([both.body]);
  });

  it.each([
    ["the same key material", () => KEYS.ed25519.line],
    ["other key material", () => KEYS.rsa2048.line],
    ["null", () => null],
  ])("answers 400 to public_key (%s): key material cannot be edited", async (_, value) => {
    const u = await sharedUser();
    const key = await addKey(u, { public_key: KEYS.ecdsa521.line });
    const res = await call(
      "PUT",
      `/api/ssh-keys/${key.id}`,
      { name: "renamed", public_key: value() },
      { token: u.token },
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringContaining("public_key: key material cannot be edited") });
    const row = await first<{ name: string; public_key: string }>(
      "SELECT name, public_key FROM ssh_keys WHERE id = ?",
      key.id,
    );
    expect(row).toEqual({ name: key.name, public_key: KEYS.ecdsa521.line });
    await call("DELETE", `/api/ssh-keys/${key.id}`, undefined, { token: u.token });
  });

  it.each([
    ["an empty name", { name: "" }, /name/],
    ["auto_inject as a number", { auto_inject: 1 }, /auto_inject/],
  ])("answers 400 for %s", async (_, body, error) => {
    const u = await sharedUser();
    const key = await addKey(u, { public_key: KEYS.ecdsa384.line });
    const res = await call("PUT", `/api/ssh-keys/${key.id}`, body, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(error);
    await call("DELETE", `/api/ssh-keys/${key.id}`, undefined, { token: u.token });
  });
});

describe("DELETE /api/ssh-keys/{id}", () => {
  it("deletes the key; it can be added again afterwards", async () => {
    const u = await registerUser();
    const key = await addKey(u, { public_key: KEYS.ed25519.line });
    const res = await call("DELETE", `/api/ssh-keys/${key.id}`, undefined, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect(await listKeys(u)).toEqual([]);
    const again = await call("DELETE", `/api/ssh-keys/${key.id}`, undefined, { token: u.token });
    expect(again.status).toBe(404);
    await addKey(u, { public_key: KEYS.ed25519.line });
  });
});

describe("another user's keys", () => {
  it("are not listed, and PUT and DELETE answer 404 without changing them", async () => {
    const [alice, eve] = await Promise.all([registerUser("Alice"), registerUser("Eve")]);
    const key = await addKey(alice, { public_key: KEYS.ed25519.line, name: "alice" });
    expect(await listKeys(eve)).toEqual([]);
    for (const [method, body] of [
      ["PUT", { name: "eve's now", auto_inject: true }],
      ["DELETE", undefined],
    ] as const) {
      const res = await call(method, `/api/ssh-keys/${key.id}`, body, { token: eve.token });
      expect(res.status, method).toBe(404);
      expect(res.body).toEqual({ error: "SSH key not found" });
    }
    const unknown = await call("PUT", "/api/ssh-keys/key_doesnotexist", { name: "x" }, { token: eve.token });
    expect(unknown.status).toBe(404);
    expect(await listKeys(alice)).toEqual([
      expect.objectContaining({ id: key.id, name: "alice", auto_inject: false }),
    ]);
  });

  it("a team mate does not see them either: keys belong to the user, not the team", async () => {
    const [owner, mate] = await Promise.all([registerUser(), registerUser()]);
    const team = await createTeam(owner);
    await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: mate.user.email, role: "member" },
      {
        token: owner.token,
      },
    );
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: mate.token });
    await addKey(owner, { public_key: KEYS.ed25519.line });
    expect(await listKeys(mate)).toEqual([]);
  });
});

describe("OpenAPI", () => {
  it("documents the SSH routes, each behind authentication", async () => {
    const documented = await documentedOperations();
    const ssh = documented.filter((op) => /^\/api\/(ssh-keys|pods\/\{name\}\/ssh)/.test(op.path));
    expect(ssh.map((op) => `${op.method} ${op.path}`).sort()).toEqual([
      "DELETE /api/pods/{name}/ssh/keys",
      "DELETE /api/ssh-keys/{id}",
      "GET /api/pods/{name}/ssh",
      "GET /api/pods/{name}/ssh/keys",
      "GET /api/ssh-keys",
      "POST /api/pods/{name}/ssh/keys",
      "POST /api/ssh-keys",
      "PUT /api/ssh-keys/{id}",
    ]);
    expect(ssh.every((op) => op.secured)).toBe(true);
  });
});
