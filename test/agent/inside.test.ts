import { describe, expect, it } from "vitest";
import { encodedSize, fitPair, headWithin } from "../../agent/inside/budget";
import { checkCommand, DEFAULT_WORKDIR } from "../../agent/inside/command";
import { caseInsensitive, grepLines, LOG_WINDOW_BYTES, renderLine, tailLines } from "../../agent/inside/logs";
import { checkPodPath } from "../../shared/pod-paths";

describe("pod paths (shared by Worker and agent)", () => {
  it.each([
    ["/home/pod_user", "/home/pod_user"],
    ["/home/pod_user/app/", "/home/pod_user/app"],
    ["/home/pod_user//app/./src", "/home/pod_user/app/src"],
    ["/var/www/html", "/var/www/html"],
    ["/tmp", "/tmp"],
  ])("accepts %s as %s", (input, path) => {
    expect(checkPodPath(input)).toEqual({ ok: true, path });
  });

  it.each([
    ["/etc", /inside/],
    ["../x", /absolute/],
    ["app", /absolute/],
    ["/home/pod_user/../etc", /\.\./],
    ["/home/pod_user/app/..", /\.\./],
    ["/home/pod_userx", /inside/],
    ["/tmpfoo", /inside/],
    ["/home/pod_user/a\nb", /control/],
    ["", /empty/],
  ])("refuses %j", (input, reason) => {
    const r = checkPodPath(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe("the agent's own checks of a command (it trusts no caller)", () => {
  it("defaults the workdir to the app root and normalises a given one", () => {
    expect(checkCommand(["ls"], undefined)).toBe(DEFAULT_WORKDIR);
    expect(checkCommand(["ls"], "/tmp/./x/")).toBe("/tmp/x");
  });

  it.each([
    [[], undefined, /command/],
    [["x".repeat(8193)], undefined, /command\.0/],
    [["a\0b"], undefined, /NUL/],
    [["ls"], "/etc", /workdir/],
    [["ls"], "/home/pod_user/../../etc", /workdir/],
  ])("refuses %j in %s", (command, workdir, error) => {
    expect(() => checkCommand(command as string[], workdir)).toThrow(error);
  });
});

describe("log grep case rule", () => {
  it.each([
    ["error", true],
    ["err\\d+", true],
    ["Error", false],
    ["\\S+", false],
  ])("%s → case-insensitive %s", (pattern, ci) => {
    expect(caseInsensitive(pattern)).toBe(ci);
  });
});

describe("a log's bounded read", () => {
  it("takes the last lines of a window, and marks a first line that starts before it", () => {
    expect(tailLines(Buffer.from("a\nb\nc\n"), 2, 10)).toEqual([{ text: "b" }, { text: "c" }]);
    // 11 bytes of a 10-byte window: the byte before the window is not a newline
    expect(tailLines(Buffer.from("xxxxxx\nyyy\n"), 5, 10)).toEqual([
      { text: "xxxxx", startCut: true },
      { text: "yyy" },
    ]);
    // … and here it is: the window starts a line
    expect(tailLines(Buffer.from("\nxxxxxx\nyyy"), 5, 10)).toEqual([{ text: "xxxxxx" }, { text: "yyy" }]);
    expect(tailLines(Buffer.from("\0".repeat(LOG_WINDOW_BYTES + 1)), 1)).toEqual([
      { text: "\0".repeat(LOG_WINDOW_BYTES), startCut: true },
    ]);
  });

  it("renders cut lines with a marker, keeping the end of a line whose start was not read", () => {
    expect(renderLine({ text: "x".repeat(8200) })).toBe(
      `${"x".repeat(8192)} [line truncated: 8 characters omitted]`,
    );
    expect(renderLine({ text: `a${"x".repeat(8192)}`, startCut: true })).toBe(
      `[line truncated] ${"x".repeat(8192)}`,
    );
    expect(renderLine({ text: "ab", endCut: true })).toBe("ab [line truncated]");
  });

  it("drops a filtered read's last fragment when the output was cut", () => {
    expect(grepLines("new\nold\nfrag", true)).toEqual([{ text: "new" }, { text: "old" }]);
    expect(grepLines("new\nold\n", false)).toEqual([{ text: "new" }, { text: "old" }]);
    expect(grepLines(`${"y".repeat(32769)}\n`, false)).toEqual([{ text: "y".repeat(32769), endCut: true }]);
  });
});

describe("result budget", () => {
  it("keeps small pairs whole and shares the budget between large ones", () => {
    expect(fitPair("a", "b", 100)).toEqual(["a", "b"]);
    const [a, b] = fitPair("x".repeat(1000), "y", 100);
    expect(b).toBe("y");
    expect(encodedSize(a) + encodedSize(b)).toBeLessThanOrEqual(100);
    const [c, d] = fitPair("\0".repeat(1000), "z".repeat(1000), 120);
    expect(encodedSize(c)).toBeLessThanOrEqual(60);
    expect(d.length).toBe(58);
  });

  it("cuts at the longest head that fits", () => {
    expect(headWithin("\0\0\0", 14)).toBe("\0\0");
  });
});
