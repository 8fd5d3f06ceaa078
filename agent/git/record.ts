import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { DeployOutcome, DetectedCommands } from "../../shared/protocol/git";
import { type Built, lazy } from "../../shared/protocol/lazy";
import { writeAtomic } from "../disk/write-atomic";

/**
 * What the host remembers of a pod's deployments, under `<state dir>/git/<pod>/`: `releases.json`
 * (the kept releases, newest first, with the hash of their dependency files) and
 * `outcomes/<deployment id>.json` (a finished deploy's or rollback's outcome: the same id again
 * answers from here and never builds twice). Files are written to a temporary name and renamed.
 * The bare repository the branch is fetched into is a cache, in the host cache's
 * `git/<pod>/repo.git` (its own disk limit, agent/disk/host-cache.ts).
 */

export const KEEP_RELEASES = 5;

const Release = lazy(() =>
  z.object({
    id: z.string(),
    commit: z.object({ sha: z.string(), message: z.string() }),
    detected: DetectedCommands(),
    /** sha256 of the install command and the dependency files: equal → reuse the dependency dir */
    depsKey: z.string().nullable(),
    /** the directory inside the release that ~/app points at (a static build's output), null: the release */
    webRoot: z.string().nullable().default(null),
    at: z.number(),
  }),
);
export type Release = Built<typeof Release>;

const Releases = lazy(() => z.object({ current: z.string().nullable(), releases: z.array(Release()) }));
export type Releases = Built<typeof Releases>;

/** an outcome's record: its message is at most 2000 characters, the rest a few small fields */
const ROOM_FOR_OUTCOME = 4096;

export class PodRecord {
  readonly dir: string;
  /** the bare repository the branch is fetched into: in the host cache (agent/disk/host-cache.ts) */
  readonly repoDir: string;

  constructor(config: { stateDir: string; cacheDir: string }, pod: string) {
    this.dir = join(config.stateDir, "git", pod);
    this.repoDir = join(config.cacheDir, "git", pod, "repo.git");
  }

  async releases(): Promise<Releases> {
    const raw = await readFile(join(this.dir, "releases.json"), "utf8").catch(() => null);
    if (raw) {
      const parsed = Releases().safeParse(JSON.parse(raw));
      if (parsed.success) return parsed.data;
    }
    return { current: null, releases: [] };
  }

  async saveReleases(r: Releases): Promise<void> {
    await this.write("releases.json", JSON.stringify(r));
  }

  async outcome(deploymentId: string): Promise<DeployOutcome | null> {
    const raw = await readFile(join(this.dir, "outcomes", `${deploymentId}.json`), "utf8").catch(() => null);
    if (!raw) return null;
    const parsed = DeployOutcome().safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  }

  async saveOutcome(deploymentId: string, outcome: DeployOutcome): Promise<void> {
    await this.write(join("outcomes", `${deploymentId}.json`), JSON.stringify(outcome));
  }

  /**
   * The releases record as it travels with a pod moving to another host (its release directories
   * travel in its home): the text of `releases.json`, or null when there is none.
   */
  async exportReleases(): Promise<string | null> {
    const r = await this.releases();
    return r.releases.length > 0 ? JSON.stringify(r) : null;
  }

  /**
   * A moved pod's releases record from its old host, taken only when it parses and this host has
   * none of its own yet (a replayed create must not undo a deploy made since). Whether it was taken.
   */
  async importReleases(text: string): Promise<boolean> {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return false;
    }
    const parsed = Releases().safeParse(raw);
    if (!parsed.success || (await this.releases()).releases.length > 0) return false;
    await this.saveReleases(parsed.data);
    return true;
  }

  /** everything the host kept for the pod (its deletion) */
  async remove(): Promise<void> {
    await rm(join(this.repoDir, ".."), { recursive: true, force: true });
    await rm(this.dir, { recursive: true, force: true });
  }

  /**
   * Throws (ENOSPC) unless the state directory can take the records a switch writes, right now: a
   * deploy or rollback checks it before it switches, so a full disk fails it with the old release
   * serving, not after the switch with the new one serving and unrecorded. The probe is the releases
   * record's size and room for an outcome, written and removed.
   */
  async checkRoom(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const probe = join(this.dir, `room.${process.pid}.tmp`);
    try {
      await writeFile(probe, `${JSON.stringify(await this.releases())}${" ".repeat(ROOM_FOR_OUTCOME)}`, {
        mode: 0o600,
      });
    } finally {
      await rm(probe, { force: true });
    }
  }

  private async write(name: string, text: string): Promise<void> {
    const path = join(this.dir, name);
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(path, text, 0o600);
  }
}

/** The releases to keep after `id` starts serving: it, then the newest others, KEEP_RELEASES in all. */
export function keepAfter(r: Releases, serving: string): string[] {
  const ids = [serving, ...r.releases.map((x) => x.id).filter((id) => id !== serving)];
  return ids.slice(0, KEEP_RELEASES);
}
