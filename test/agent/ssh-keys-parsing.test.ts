import { describe, expect, it } from "vitest";
import { AuthFailureLimiter } from "../../agent/ssh/auth-limiter";
import {
  parseAuthorizedKeyLine,
  parseAuthorizedKeys,
  withKey,
  withoutKey,
} from "../../agent/ssh/authorized-keys";

/** The pure halves of the gateway: reading authorized_keys like sshd, and counting failed logins. */

const ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE5JiNE5CJvbW3l72ouu37AmCvAZJ2XEcZPbUFsLNolf";
const ED2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEM2mNrdn9SV9qd7csSTpHWNMNrkiiQowIA7+ZxvuFa";

describe("authorized_keys", () => {
  it("reads keys with comments, with options (quoted blanks and escaped quotes), and skips the rest", () => {
    const text = [
      "# a comment",
      "",
      `${ED} me@laptop with spaces`,
      `from="10.0.0.1",command="echo \\"a b\\"",no-pty ${ED2} ci`,
      "ssh-ed25519 AAAAnot-base64!",
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample test@example", // base64, but not a key
      `ssh-rsa ${ED.split(" ")[1]}`, // an ed25519 blob under another type
      'command="unterminated ssh-ed25519 AAAA',
      "   ",
    ].join("\r\n");
    const keys = parseAuthorizedKeys(text);
    expect(keys.map((k) => k.type)).toEqual(["ssh-ed25519", "ssh-ed25519"]);
    expect(keys[0]?.line).toBe(`${ED} me@laptop with spaces`);
    expect(keys[1]?.line.startsWith("from=")).toBe(true);
    expect(keys[1]?.blob.equals(Buffer.from(ED2.split(" ")[1] ?? "", "base64"))).toBe(true);
  });

  it("adds once per key whatever the comment, removes every line of it and leaves the rest alone", () => {
    const a = parseAuthorizedKeyLine(`${ED} one`);
    const again = parseAuthorizedKeyLine(`${ED} two`);
    const b = parseAuthorizedKeyLine(ED2);
    if (!a || !again || !b) throw new Error("test keys must parse");
    const start = "# mine\nno-newline-at-end";
    const added = withKey(start, a);
    expect(added).toEqual({ text: `${start}\n${ED} one\n`, added: true });
    expect(withKey(added.text, again)).toEqual({ text: added.text, added: false });
    const both = withKey(`${added.text}no-pty ${ED} three\n`, b).text;
    const removed = withoutKey(both, again);
    expect(removed).toEqual({ text: `${start}\n${ED2}\n`, removed: true });
    expect(withoutKey(removed.text, a)).toEqual({ text: removed.text, removed: false });
  });
});

describe("failed login limit", () => {
  it("blocks an address after enough failures within the window, for a while", () => {
    let now = 0;
    const limiter = new AuthFailureLimiter({ maxFailures: 3, windowMs: 1_000, blockMs: 5_000 }, () => now);
    expect(limiter.fail("1.2.3.4")).toBe(false);
    now = 1_500; // the first failure has left the window
    expect(limiter.fail("1.2.3.4")).toBe(false);
    expect(limiter.fail("1.2.3.4")).toBe(false);
    expect(limiter.blocked("1.2.3.4")).toBe(false);
    expect(limiter.fail("1.2.3.4")).toBe(true);
    expect(limiter.blocked("1.2.3.4")).toBe(true);
    expect(limiter.blocked("5.6.7.8")).toBe(false);
    now += 5_001;
    expect(limiter.blocked("1.2.3.4")).toBe(false);
  });
});
