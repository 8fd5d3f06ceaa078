import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { LogSource } from "../../shared/protocol/inside";

/** Where a pod's log was read to (./history.ts): its inode, the offset reached, and when. */
export const Cursor = z.object({ ino: z.string(), offset: z.number().int().min(0), at: z.number() });
export type Cursor = z.infer<typeof Cursor>;

/**
 * What the host can tell of a log on the pod's disk without the pod: "unchanged" when it is where
 * the cursor left it (same inode, its size the cursor's offset) or there is none; for an empty log
 * the cursor the pod's answer would have left (at its start: every pod's logs are made empty when
 * it boots, so a new pod's first collection needs no exec either); "ask" otherwise. The collection
 * in the pod (COLLECT in ./history.ts) would answer the same, at the cost of an exec per pod and log
 * every period: at idle, with hundreds of pods, most of the agent's and the engine's work
 * (bench/density).
 *
 * Nothing of the pod's disk is read here, only looked at with lstat, and a link is never followed
 * into the host: a `~/logs` or log that is not a plain directory or file (a link the tenant
 * planted, which in the pod points into the pod) is "ask". What a tenant racing a link in between
 * can change is whether its own logs are collected this period.
 */
export async function lookOnDisk(
  home: string,
  source: LogSource,
  cursor: Cursor | null,
  now: number,
): Promise<"ask" | "unchanged" | Cursor> {
  const look = (path: string) =>
    lstat(path, { bigint: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return "absent" as const;
      throw error;
    });
  try {
    const dir = await look(home);
    if (dir === "absent" || !dir.isDirectory()) return "ask";
    const logs = await look(join(home, "logs"));
    if (logs === "absent") return "unchanged";
    if (!logs.isDirectory()) return "ask";
    const log = await look(join(home, "logs", `${source}.log`));
    if (log === "absent") return "unchanged";
    if (!log.isFile()) return "ask";
    const ino = String(log.ino);
    if (cursor?.ino === ino && log.size === BigInt(cursor.offset)) return "unchanged";
    if (log.size === 0n) return { ino, offset: 0, at: cursor?.at ?? now };
    return "ask";
  } catch {
    return "ask";
  }
}
