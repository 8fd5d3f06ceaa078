import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDotenv, setDotenvVars, unsetDotenvVars } from "../../agent/inside/dotenv";

const run = promisify(execFile);
const LOADER = join(import.meta.dirname, "../../images/base/rootfs/opt/podhost/lib/dotenv-exec.py");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "podhost-dotenv-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What the pod's own loader (the image's dotenv-exec.py behind pod-env-exec, run with python3) puts into a process's env. */
async function loaderSees(text: string, keys: string[]): Promise<Record<string, string | null>> {
  const file = join(dir, `env-${Math.random().toString(36).slice(2)}`);
  await writeFile(file, text);
  const script = "import os,sys,json; print(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))";
  const { stdout } = await run("python3", [LOADER, file, "python3", "-c", script, ...keys], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  return JSON.parse(stdout);
}

const TRICKY: Record<string, string> = {
  NEWLINES: "line one\nline two\r\nthree",
  QUOTES: `she said "hi" and 'bye'`,
  HASH: "a #not a comment# b",
  EQUALS: "k=v=w",
  BACKSLASH: "C:\\path\\n not a newline \\\\ two",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${VAR} the loader must not expand
  DOLLAR: "$HOME ${PATH} \\$",
  SPACES: "  padded  ",
  EMPTY: "",
  TAB: "a\tb",
  UNICODE: "héllo ✓ 日本",
  BACKTICK: "`cmd`",
};

describe("dotenv editing, read back by the pod's own loader", () => {
  it("writes any value so the loader and our parser read it back exactly", async () => {
    const text = setDotenvVars("", TRICKY);
    expect(parseDotenv(text)).toEqual(TRICKY);
    expect(await loaderSees(text, Object.keys(TRICKY))).toEqual(TRICKY);
  });

  it("parses comments, blank lines, export, quoted and unquoted values like the loader", async () => {
    const text = [
      "# a comment",
      "",
      "export A=plain value   # trailing comment",
      "B=a#b",
      "C='single $HOME \\n literal'",
      'D="multi',
      'line"',
      "E = spaced ",
      "not a line",
      "F=`tick`",
      "G=first",
      "G=second",
      'H="unterminated',
    ].join("\n");
    const keys = ["A", "B", "C", "D", "E", "F", "G", "H"];
    const ours = parseDotenv(text);
    expect(ours).toEqual({
      A: "plain value",
      B: "a#b",
      C: "single $HOME \\n literal",
      D: "multi\nline",
      E: "spaced",
      F: "tick",
      G: "second",
      H: "unterminated",
    });
    expect(await loaderSees(text, keys)).toEqual(ours);
  });

  it("merges: rewrites the winning assignment in place, drops duplicates, appends new keys, keeps comments", () => {
    const text = "# top\nA=1\nB=2 # note\nA=3\n# end";
    const next = setDotenvVars(text, { A: "x", C: "new" });
    expect(next).toBe('# top\nB=2 # note\nA="x"\n# end\nC="new"\n');
    expect(parseDotenv(next)).toEqual({ A: "x", B: "2", C: "new" });
  });

  it("unsets every assignment of a key and nothing else", () => {
    const text = 'A=1\n# keep\nB="multi\nline"\nA=2\nC=3\n';
    const next = unsetDotenvVars(text, ["A", "B", "MISSING"]);
    expect(next).toBe("# keep\nC=3\n");
  });
});
