import pc from "picocolors";

/**
 * Where output goes: data on stdout (one JSON document with --json, newline-delimited JSON for
 * streams), progress, prompts and errors on stderr. Colour follows picocolors, which honours
 * NO_COLOR, FORCE_COLOR and whether the stream is a terminal.
 */
export interface Output {
  json: boolean;
  /** the command's result: JSON as the API named it, or the human text */
  result(data: unknown, human: () => string): void;
  /** one record of a stream (ndjson with --json) */
  record(data: unknown, human: () => string): void;
  /** a note for the human on stderr (never with --json) */
  note(text: string): void;
  /** a warning on stderr, also with --json */
  warn(text: string): void;
}

export function createOutput(json: boolean): Output {
  const line = (text: string) => {
    if (text) process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  };
  return {
    json,
    result(data, human) {
      if (json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      else line(human());
    },
    record(data, human) {
      if (json) process.stdout.write(`${JSON.stringify(data)}\n`);
      else line(human());
    },
    note(text) {
      if (!json) process.stderr.write(`${text}\n`);
    },
    warn(text) {
      process.stderr.write(`${pc.yellow("warning:")} ${text}\n`);
    },
  };
}

/** A fixed-width table of rows (strings), the header dimmed. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [pc.dim(fmt(header)), ...rows.map(fmt)].join("\n");
}
