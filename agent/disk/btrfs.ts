import { execFile } from "node:child_process";
import { AgentError } from "../errors";

/**
 * The few `btrfs` commands a pod's disk needs, each an argv (no shell) whose arguments are the
 * agent's own paths and numbers. Their output is small and bounded (maxBuffer): a qgroup line per
 * subvolume of the filesystem.
 */

const MAX_OUTPUT_BYTES = 1024 * 1024;
const TIMEOUT_MS = 30_000;

export class BtrfsError extends AgentError {
  constructor(
    readonly argv: string[],
    readonly stderr: string,
  ) {
    super("internal", `btrfs ${argv.join(" ")} failed: ${stderr.trim().slice(0, 300) || "no message"}`);
  }
}

export function btrfs(argv: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "btrfs",
      argv,
      { maxBuffer: MAX_OUTPUT_BYTES, timeout: TIMEOUT_MS, env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" } },
      (error, stdout, stderr) => {
        if (error) reject(new BtrfsError(argv, `${stderr || error.message}`));
        else resolve(stdout);
      },
    );
  });
}

export interface Qgroup {
  /** bytes charged to the qgroup (what its limit is measured against) */
  referencedBytes: number;
  /** the limit on referenced bytes; null when there is none */
  maxReferencedBytes: number | null;
  /** its member qgroups (`0/<subvolume id>`), for a level-1 qgroup */
  children: string[];
}

/**
 * One qgroup (`0/<id>` or `1/<id>`) from `btrfs qgroup show -pcre --raw <path>`, whose lines are
 * `<qgroupid> <rfer> <excl> <max_rfer> <max_excl> <parents> <children> [path]` ("none" where no
 * limit is set, "-" where there are no parents or children, else a comma-separated list).
 */
export function parseQgroup(output: string, qgroupId: string): Qgroup | null {
  for (const line of output.split("\n")) {
    const cols = line.trim().split(/\s+/);
    if (cols[0] !== qgroupId) continue;
    const rfer = Number(cols[1]);
    const max = cols[3];
    const children = cols[6];
    if (!Number.isSafeInteger(rfer) || max === undefined || children === undefined) return null;
    const maxBytes = max === "none" ? null : Number(max);
    if (maxBytes !== null && !Number.isSafeInteger(maxBytes)) return null;
    return {
      referencedBytes: rfer,
      maxReferencedBytes: maxBytes,
      children: children === "-" ? [] : children.split(",").filter((c) => /^0\/\d+$/.test(c)),
    };
  }
  return null;
}
