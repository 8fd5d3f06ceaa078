import type { PodSpec } from "../../shared/protocol";
import { AgentError } from "../errors";
import { POD_GID, POD_UID } from "./naming";
import type { TarEntry } from "./tar";

/**
 * The files a pod spec becomes inside the home volume at creation (or a clone), as tar entries
 * relative to /home/pod_user, owned by pod_user: the app's .env (only when the spec has env vars),
 * crontab, workers, authorized_keys.
 * (The Files API, which works on a running pod's files, is agent/files/.) Pure functions: everything that could break the file formats is validated here.
 */

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const WORKER_NAME = /^[A-Za-z0-9_.-]+$/;

/** `KEY="value"` with `\`, `"`, newline, CR and tab escaped: the one quoting the pod's loader reads back exactly. */
export function dotenvLine(key: string, value: string): string {
  if (!ENV_KEY.test(key))
    throw new AgentError("bad_request", `env: invalid variable name ${JSON.stringify(key)}`);
  const escaped = value.replace(/[\\"\n\r\t]/g, (c) =>
    c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t" : `\\${c}`,
  );
  return `${key}="${escaped}"`;
}

export function renderDotenv(env: Record<string, string>): string {
  const lines = Object.entries(env).map(([k, v]) => dotenvLine(k, v));
  return lines.length ? `${lines.join("\n")}\n` : "";
}

const CRONTAB_HEADER = `# Cron jobs of this pod: standard 5-field lines, run as pod_user in ~/app with the app's
# .env loaded; output goes to ~/logs/cron.log. Re-read every minute: no reload needed.
# Times are UTC.
`;

const oneLine = (what: string, s: string) => {
  if (/[\r\n]/.test(s)) throw new AgentError("bad_request", `${what} must be a single line`);
  return s.trim();
};

export function renderCrontab(jobs: PodSpec["cronJobs"]): string {
  const lines = jobs.map((j) => {
    const schedule = oneLine("cron schedule", j.schedule);
    const command = oneLine("cron command", j.command);
    if (!schedule || !command) throw new AgentError("bad_request", "cron job needs a schedule and a command");
    return `${schedule} ${command}`;
  });
  return CRONTAB_HEADER + lines.map((l) => `${l}\n`).join("");
}

export function renderAuthorizedKeys(keys: string[]): string {
  const lines = keys.map((k) => oneLine("authorized key", k)).filter(Boolean);
  return lines.map((l) => `${l}\n`).join("");
}

export function validWorkerName(name: string): boolean {
  return WORKER_NAME.test(name) && name !== "." && name !== "..";
}

const file = (path: string, content: string, mode = 0o644): TarEntry => ({
  path,
  type: "file",
  mode,
  content,
  uid: POD_UID,
  gid: POD_GID,
});
const dir = (path: string, mode = 0o755): TarEntry => ({
  path,
  type: "dir",
  mode,
  uid: POD_UID,
  gid: POD_GID,
});

export interface SpecFileOptions {
  /** write a part only when the spec has content for it (clone: keep what the source pod had) */
  onlyNonEmpty?: boolean;
}

/** Tar entries to extract at /home/pod_user. Directories first so the files' parents exist with the right owner. */
export function specFileEntries(spec: PodSpec, opts: SpecFileOptions = {}): TarEntry[] {
  const all = !opts.onlyNonEmpty;
  const entries: TarEntry[] = [];
  const envCount = Object.keys(spec.env).length;
  // No env vars, no .env: an empty file would be "an env file" to the API (DELETE /env answers 404
  // only when the pod has none), and the image's loader reads a missing file as no variables.
  if (all || envCount) entries.push(dir("app"));
  if (envCount) entries.push(file("app/.env", renderDotenv(spec.env), 0o600));
  if (all || spec.cronJobs.length || spec.workers.length) entries.push(dir(".pod"));
  if (all || spec.cronJobs.length) entries.push(file(".pod/crontab", renderCrontab(spec.cronJobs)));
  if (spec.workers.length) {
    entries.push(dir(".pod/workers"));
    const seen = new Set<string>();
    for (const w of spec.workers) {
      if (!validWorkerName(w.name)) {
        throw new AgentError(
          "bad_request",
          `worker name ${JSON.stringify(w.name)} must match [A-Za-z0-9_.-]+`,
        );
      }
      if (seen.has(w.name)) throw new AgentError("bad_request", `worker ${w.name} given twice`);
      seen.add(w.name);
      entries.push(file(`.pod/workers/${w.name}`, `${w.command.trim()}\n`));
    }
  }
  if (all || spec.authorizedKeys.length) {
    entries.push(
      dir(".ssh", 0o700),
      file(".ssh/authorized_keys", renderAuthorizedKeys(spec.authorizedKeys), 0o600),
    );
  }
  return entries;
}
