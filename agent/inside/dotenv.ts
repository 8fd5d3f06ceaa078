import { dotenvLine } from "../docker/spec-files";

/**
 * The app's `.env` as text, read and edited the way the pod's loader reads it
 * (images/base/rootfs/opt/podhost/bin/pod-env-exec): a line-by-line port of its parser that also
 * remembers where each assignment sits, so an edit replaces or drops only the assignments it
 * touches and keeps the user's comments, order and formatting everywhere else.
 */

const KEY = /[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*/y;
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\", $: "$" };

export interface DotenvEntry {
  key: string;
  value: string;
  /** the assignment's text span: from its line's start to past its last line's newline */
  start: number;
  end: number;
}

export function parseDotenvEntries(text: string): DotenvEntry[] {
  const entries: DotenvEntry[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const start = i;
    let eol = text.indexOf("\n", i);
    if (eol < 0) eol = n;
    KEY.lastIndex = i;
    const m = KEY.exec(text);
    // The loader matches within the line only: a key followed by `=` on a later line is malformed.
    if (!m || KEY.lastIndex > eol) {
      i = eol + 1;
      continue;
    }
    const key = m[1] ?? "";
    i = KEY.lastIndex;
    const q = i < n ? text[i] : "";
    if (q === "'" || q === '"' || q === "`") {
      i += 1;
      let value = "";
      while (i < n && text[i] !== q) {
        let c = text[i] ?? "";
        if (q === '"' && c === "\\" && i + 1 < n) {
          i += 1;
          const next = text[i] ?? "";
          c = ESCAPES[next] ?? `\\${next}`;
        }
        value += c;
        i += 1;
      }
      if (i >= n) {
        // unterminated quote: the rest of the file is the value
        entries.push({ key, value, start, end: n });
        break;
      }
      const close = text.indexOf("\n", i);
      i = close < 0 ? n : close + 1;
      entries.push({ key, value, start, end: i });
    } else {
      const raw = text.slice(i, eol).split(/[ \t]#/, 1)[0] ?? "";
      entries.push({ key, value: raw.trim(), start, end: Math.min(eol + 1, n) });
      i = eol + 1;
    }
  }
  return entries;
}

/** What the loader ends up with: the last assignment of a key wins. */
export function parseDotenv(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const e of parseDotenvEntries(text)) vars[e.key] = e.value;
  return vars;
}

interface Splice {
  start: number;
  end: number;
  text: string;
}

function applySplices(text: string, splices: Splice[]): string {
  let out = "";
  let at = 0;
  for (const s of [...splices].sort((a, b) => a.start - b.start)) {
    out += text.slice(at, s.start) + s.text;
    at = s.end;
  }
  return out + text.slice(at);
}

/**
 * Merge `vars` into the file: a key already assigned is rewritten where its last (winning)
 * assignment stands and its earlier ones are dropped; new keys are appended in the given order.
 * Every written value is double-quoted with escapes, so any string reads back exactly.
 */
export function setDotenvVars(text: string, vars: Record<string, string>): string {
  const entries = parseDotenvEntries(text);
  const splices: Splice[] = [];
  let appended = "";
  for (const [key, value] of Object.entries(vars)) {
    const line = `${dotenvLine(key, value)}\n`;
    const mine = entries.filter((e) => e.key === key);
    const last = mine.at(-1);
    if (!last) {
      appended += line;
      continue;
    }
    for (const e of mine) splices.push({ start: e.start, end: e.end, text: e === last ? line : "" });
  }
  const edited = applySplices(text, splices);
  if (!appended) return edited;
  return edited === "" || edited.endsWith("\n") ? edited + appended : `${edited}\n${appended}`;
}

/** Drop every assignment of `keys`; comments and other lines stay. */
export function unsetDotenvVars(text: string, keys: readonly string[]): string {
  const drop = new Set(keys);
  const splices = parseDotenvEntries(text)
    .filter((e) => drop.has(e.key))
    .map((e) => ({ start: e.start, end: e.end, text: "" }));
  return applySplices(text, splices);
}
