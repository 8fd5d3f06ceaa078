import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { dotenvLine } from "../../agent/docker/spec-files";
import { parseDotenv } from "../../agent/inside/dotenv";

/**
 * The Environment tab's script (worker/dashboard/assets/env.client.js) carries its own .env parser
 * and writer: the dashboard's scripts are plain files served as they are (no build step), and the
 * one shared copy (agent/inside/dotenv.ts, the port of the pod's loader, which the CLI imports) is
 * TypeScript the browser cannot load. So the browser's copy is held to the shared one here: the same
 * text must give the same variables, and each side's written line must read back the same value.
 */

interface BrowserDotenv {
  parseDotenv(text: string): { vars: Map<string, string>; errors: string[] };
  dotenvLine(key: string, value: string): string;
}

async function browserCopy(): Promise<BrowserDotenv> {
  const source = await readFile(
    new URL("../../worker/dashboard/assets/env.client.js", import.meta.url),
    "utf8",
  );
  // the file's functions without its last line, which wires it to the page's elements
  const body = source.replace(/\nfor \(const root of document[^\n]*\n?$/, "\n");
  expect(body).not.toContain('document.querySelectorAll("[data-env]")) setup(root)');
  return new Function(`${body}\nreturn { parseDotenv, dotenvLine };`)() as BrowserDotenv;
}

const TEXTS = [
  "A=1\nB=two words\n",
  "# comment\n\nexport TOKEN=abc # trailing comment\nEMPTY=\n",
  'Q="a \\"quoted\\" value\\n with \\t escapes"\nS=\'single $HOME\'\n',
  'MULTI="line one\nline two"\nAFTER=yes\n',
  "DUP=first\nDUP=second\n",
  "  SPACED  =  padded value  \n",
  "URL=postgres://u:p@h:5432/db?sslmode=require\nHASH=a#b\nBACK=`tick value`\n",
];

describe("the Environment tab's .env parser", () => {
  it("reads every text as the shared parser (the pod's loader) does", async () => {
    const browser = await browserCopy();
    for (const text of TEXTS) {
      const ours = browser.parseDotenv(text);
      expect(ours.errors, text).toEqual([]);
      expect(Object.fromEntries(ours.vars), text).toEqual(parseDotenv(text));
    }
  });

  it("writes lines both parsers read back to the same value", async () => {
    const browser = await browserCopy();
    const values = [
      "plain",
      'quote " and \\ backslash',
      "new\nline\tand tab\r",
      "# not a comment",
      "$HOME",
      "",
    ];
    for (const value of values) {
      const line = browser.dotenvLine("K", value);
      expect(line).toBe(dotenvLine("K", value));
      expect(parseDotenv(`${line}\n`).K).toBe(value);
      expect(browser.parseDotenv(`${line}\n`).vars.get("K")).toBe(value);
    }
  });
});
