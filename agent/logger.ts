/** Structured log lines (one JSON object per line on stdout/stderr), so the host's log shipper can parse them. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  base: Record<string, unknown> = {},
  quiet = process.env.PODHOST_AGENT_QUIET === "1",
): Logger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) => {
    if (quiet && level === "info") return;
    const line = JSON.stringify({ t: new Date().toISOString(), level, msg, ...base, ...fields });
    (level === "info" ? process.stdout : process.stderr).write(`${line}\n`);
  };
  return {
    info: (msg, fields) => write("info", msg, fields),
    warn: (msg, fields) => write("warn", msg, fields),
    error: (msg, fields) => write("error", msg, fields),
    child: (fields) => createLogger({ ...base, ...fields }, quiet),
  };
}
