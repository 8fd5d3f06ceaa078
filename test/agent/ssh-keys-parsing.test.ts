import { describe, expect, it } from "vitest";
import { AuthFailureLimiter } from "../../agent/ssh/auth-limiter";
import {
  parseAuthorizedKeyLine,
  parseAuthorizedKeys,
  withKey,
  withoutKey,
} from "../../agent/ssh/authorized-keys";
import {
  fromMatches,
  keyPermits,
  MAX_FROM_PATTERN_CHARS,
  MAX_FROM_PATTERNS,
  NO_OPTIONS,
  parseKeyOptions,
  wildcardMatch,
} from "../../agent/ssh/key-options";

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

describe("authorized_keys options", () => {
  it("reads what sshd reads and refuses what sshd refuses", () => {
    expect(parseKeyOptions("no-pty")).toEqual({ noPty: true });
    expect(parseKeyOptions("restrict")).toEqual({ noPty: true });
    expect(parseKeyOptions("restrict,pty")).toEqual({ noPty: false }); // later options win
    expect(parseKeyOptions("pty,restrict")).toEqual({ noPty: true });
    expect(parseKeyOptions('command="echo \\"a, b\\"",No-Port-Forwarding,environment="A=b"')).toEqual({
      noPty: false,
      command: 'echo "a, b"',
    });
    expect(parseKeyOptions('from="10.0.0.0/8,!10.1.*"')).toEqual({
      noPty: false,
      from: "10.0.0.0/8,!10.1.*",
    });
    expect(parseKeyOptions('expiry-time="20300102Z"')).toEqual({
      noPty: false,
      expiresAt: Date.UTC(2030, 0, 2),
    });
    for (const bad of [
      "bogus",
      "cert-authority", // a CA, not a login key: certificates are not accepted
      'command="a",command="b"',
      'from="a",from="b"',
      'from="10.0.0.1/8"', // bits past the mask
      'from="1.2.3.4,"',
      'expiry-time="20250231"',
      "command=unquoted",
      'command="unterminated',
      "no-pty,",
      'command="a"x',
    ]) {
      expect(parseKeyOptions(bad), bad).toBeNull();
    }
  });

  it("a line with options sshd refuses still names its key, but lets nobody in", () => {
    const line = parseAuthorizedKeyLine(`bogus-option ${ED}`);
    expect(line?.options).toBeNull();
    expect(parseAuthorizedKeyLine(ED)?.options).toEqual(NO_OPTIONS);
    expect(parseAuthorizedKeyLine(`no-pty,from="127.0.0.1" ${ED} c`)?.options).toEqual({
      noPty: true,
      from: "127.0.0.1",
    });
  });

  it("matches from= like sshd: addresses, networks, wildcards, negation", () => {
    const cases: [string, string, boolean][] = [
      ["127.0.0.1", "127.0.0.1", true],
      ["127.0.0.0/8", "127.0.0.1", true],
      ["10.0.0.0/8", "127.0.0.1", false],
      ["127.0.0.?", "127.0.0.1", true],
      ["*,!127.0.0.1", "127.0.0.1", false], // a negated match denies whatever else matches
      ["!10.*,*", "127.0.0.1", true],
      ["10.0.0.1", "::ffff:10.0.0.1", true], // an IPv4 client of a dual-stack listener
      ["2001:db8::/32", "2001:db8:0:0:1::5", true],
      ["2001:db8::/32", "2001:db9::1", false],
      ["::1", "0:0:0:0:0:0:0:1", true],
      ["0.0.0.0/0", "192.0.2.1", true],
      ["192.0.2.0/24", "::1", false],
      ["10.0.0.1/8", "10.0.0.1", false], // an error denies
      ["", "10.0.0.1", false],
    ];
    for (const [patterns, ip, want] of cases)
      expect(fromMatches(patterns, ip), `${patterns} ${ip}`).toBe(want);
  });

  it("applies expiry-time and from= together", () => {
    const opts = parseKeyOptions('from="192.0.2.0/24",expiry-time="20300101Z"');
    if (!opts) throw new Error("must parse");
    expect(keyPermits(opts, "192.0.2.7", Date.UTC(2029, 11, 31))).toBe(true);
    expect(keyPermits(opts, "192.0.2.7", Date.UTC(2030, 0, 1))).toBe(false);
    expect(keyPermits(opts, "198.51.100.1", Date.UTC(2029, 0, 1))).toBe(false);
  });
});

describe("from= wildcards (the pod user's text, matched without backtracking)", () => {
  it("matches * and ? as sshd's match_pattern does, everything else literally", () => {
    const cases: [string, string, boolean][] = [
      ["*", "", true],
      ["*", "127.0.0.1", true],
      ["", "", true],
      ["", "a", false],
      ["?", "", false],
      ["?", "a", true],
      ["127.0.0.?", "127.0.0.1", true],
      ["127.0.0.?", "127.0.0.10", false],
      ["127.*", "127.0.0.1", true],
      ["*.1", "127.0.0.1", true],
      ["*.2", "127.0.0.1", false],
      ["1*7*1", "127.0.0.1", true],
      ["*0*0*", "127.0.0.1", true],
      ["*0*0*0*0*", "127.0.0.1", false],
      ["a*b*c", "aXbYbZc", true],
      ["a*b*c", "aXbYbZ", false],
      ["*ab", "aab", true], // the star must give back a character it took
      ["*a?b", "xaaab", true],
      ["**", "x", true],
      ["127.0.0.1", "127x0x0x1", false], // `.` is not a wildcard
      ["[12]7.0.0.1", "127.0.0.1", false], // nor are brackets, `+`, `^`, `$`
      ["127.0.0.1+", "127.0.0.11", false],
      ["^127.0.0.1$", "127.0.0.1", false],
    ];
    for (const [pattern, subject, want] of cases)
      expect(wildcardMatch(pattern, subject), `${pattern} ~ ${subject}`).toBe(want);
  });

  it("answers at once for patterns that made the old RegExp backtrack for minutes", () => {
    const subject = "127.0.0.1";
    const t0 = performance.now();
    expect(wildcardMatch(`${"*".repeat(200)}x`, subject)).toBe(false);
    expect(wildcardMatch(`${"*?".repeat(500)}x`, "1".repeat(1000))).toBe(false);
    expect(wildcardMatch(`${"*1".repeat(511)}x`, "1".repeat(1000))).toBe(false);
    expect(fromMatches(`${"*".repeat(200)}x`, subject)).toBe(false);
    expect(fromMatches(`${"*".repeat(200)}1`, subject)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(100);
  });

  it("caps the length and the number of entries: a longer from= admits nobody", () => {
    const long = `${"*".repeat(MAX_FROM_PATTERN_CHARS)}`;
    expect(fromMatches(long, "127.0.0.1")).toBe(true);
    expect(fromMatches(`${long}*`, "127.0.0.1")).toBe(false);
    expect(parseKeyOptions(`from="${long}*"`)).toBeNull();
    const many = Array.from({ length: MAX_FROM_PATTERNS }, () => "10.0.0.1");
    expect(fromMatches([...many.slice(1), "*"].join(","), "127.0.0.1")).toBe(true);
    expect(fromMatches([...many, "*"].join(","), "127.0.0.1")).toBe(false);
    expect(parseKeyOptions(`from="${[...many, "*"].join(",")}"`)).toBeNull();
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

  it("counts an IPv6 address with the rest of its /64, and an IPv4-mapped one as its IPv4 (attacker: one subscriber's 2^64 addresses)", () => {
    const limiter = new AuthFailureLimiter({ maxFailures: 3, windowMs: 1_000, blockMs: 5_000 }, () => 0);
    expect(limiter.fail("2001:db8:7:1::1")).toBe(false);
    expect(limiter.fail("2001:db8:7:1::2")).toBe(false);
    expect(limiter.fail("2001:db8:7:1:ffff:ffff:ffff:ffff")).toBe(true);
    expect(limiter.blocked("2001:db8:7:1:abcd::9")).toBe(true);
    expect(limiter.blocked("2001:db8:7:2::1")).toBe(false);
    for (let i = 0; i < 2; i++) limiter.fail("198.51.100.4");
    expect(limiter.fail("::ffff:198.51.100.4")).toBe(true);
    expect(limiter.blocked("198.51.100.4")).toBe(true);
  });
});
