import type { Readable } from "node:stream";
import { countedArchive } from "../docker/counted-archive";
import { HOME, podNames } from "../docker/naming";
import { SH } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { inspectContainer, stopContainer } from "../docker/resources";
import { AgentError } from "../errors";
import { PodRecord } from "../git/record";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/** a delta's scripts walk, pack and unpack a home: generous, the pod is down meanwhile */
const DELTA_TIMEOUT_MS = 30 * 60_000;

/**
 * The old host's half of an evacuation's second pass, run as pod_user in the stopped pod's own view
 * of its home (a helper with only the home volume mounted, read-only root, no network): a spool
 * directory `.pod-move-<id>` (its own name fixed by the move's id, never a tenant's string) gets
 * `paths`, every entry of the home NUL-separated, `changed`, those whose inode changed since the
 * pre-copy began ($2, seconds: ctime, which no tenant can set back as it can a file's mtime), and
 * `delta.tar`, those entries packed without recursion and without following a symlink (a link
 * travels as a link). The names are data on NUL-separated lists, never words of a script. Prints the
 * count of changed entries.
 */
const PACK = `set -eu
d=".pod-move-$1"
rm -rf -- "$d"
mkdir -m 700 -- "$d"
find . -path "./$d" -prune -o -print0 > "$d/paths"
find . -path "./$d" -prune -o -newerct "@$2" -print0 > "$d/changed"
tar --create --file "$d/delta.tar" --preserve-permissions --no-recursion --null --verbatim-files-from --files-from "$d/changed"
tr -cd '\\000' < "$d/changed" | wc -c`;

/**
 * The new host's half, as pod_user in the stopped new pod's view of its home, with the old host's
 * spool put in `.pod-move-<id>`: whatever the pre-copy brought that the old home no longer names is
 * removed (`comm` of the sorted lists; `rm` of `./`-prefixed names, which no option can be mistaken
 * for), then the changed entries unpacked over the copy (GNU tar refuses a member's `..` and sets a
 * link only after the files, so no member is written through a link of the archive). The working
 * lists go in a directory of pod_user's own (`.pod-move-<id>.w`). Prints the count removed.
 */
const APPLY = `set -eu
export LC_ALL=C
d=".pod-move-$1"
w="$d.w"
rm -rf -- "$w"
mkdir -m 700 -- "$w"
find . \\( -path "./$d" -o -path "./$w" \\) -prune -o -print0 | sort -z > "$w/have"
sort -z "$d/paths" > "$w/want"
comm -z -23 "$w/have" "$w/want" > "$w/gone"
xargs -0 -r rm -rf -- < "$w/gone"
tar --extract --file "$d/delta.tar" --preserve-permissions
tr -cd '\\000' < "$w/gone" | wc -c
rm -rf -- "$w"`;

const CLEAN = `rm -rf -- ".pod-move-$1" ".pod-move-$1.w"`;

/**
 * An evacuation's second pass (shared/protocol/moves.ts, docs/hosts.md "Emptying a host"): only what
 * changed in the pod's home since the pre-copy, from the stopped old pod to the stopped new one.
 * Under the pod's lock, like every other change of the pod.
 */
export function moveHandlers(
  deps: HandlerDeps,
  locks: KeyedLock,
): Pick<HandlerTable, "pod.move.delta.export" | "pod.move.delta.apply"> {
  const { docker, config } = deps;
  const prefix = config.namePrefix;
  const names = (pod: string) => podNames(prefix, pod);
  const blobs = () => {
    if (!deps.blobs) throw new AgentError("unavailable", "this agent has no connection to stage blobs");
    return deps.blobs;
  };
  const asPodUser = async (pod: string, script: string, args: string[], what: string) => {
    const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", script, "sh", ...args], {
      timeoutMs: DELTA_TIMEOUT_MS,
    });
    if (r.exitCode !== 0)
      throw new AgentError(
        "internal",
        `${what} failed (exit ${r.exitCode}): ${r.stderr.trim().slice(-500) || "no reason given"}`,
        "pod",
      );
    return Number.parseInt(r.stdout.trim(), 10) || 0;
  };
  /** the pod's container, stopped: its home holds still while the delta is made or applied */
  const stopped = async (pod: string) => {
    const info = await inspectContainer(docker, names(pod).container);
    if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
    if (info.State.Running) await stopContainer(docker, names(pod).container);
    return docker.getContainer(names(pod).container);
  };

  return {
    "pod.move.delta.export": guard("pod.move.delta.export", ({ name, id, since, blobKey }, ctx) =>
      locks.run(name, async () => {
        const container = await stopped(name);
        try {
          // two seconds' margin for the clock's granularity: a few entries more, none fewer
          const sinceS = Math.max(0, Math.floor(since / 1000) - 2);
          const changed = await asPodUser(name, PACK, [id, String(sinceS)], "packing the changed files");
          const archive = countedArchive(
            (await container.getArchive({ path: `${HOME}/.pod-move-${id}` })) as Readable,
          );
          await blobs().upload(blobKey, archive.stream, undefined, ctx.signal);
          return {
            bytes: archive.bytes(),
            changed,
            releases: await new PodRecord(config, name).exportReleases(),
          };
        } finally {
          await asPodUser(name, CLEAN, [id], "removing the delta's spool").catch(() => undefined);
        }
      }),
    ),

    "pod.move.delta.apply": guard("pod.move.delta.apply", ({ name, id, blobKey, releases }, ctx) =>
      locks.run(name, async () => {
        const container = await stopped(name);
        try {
          await asPodUser(name, CLEAN, [id], "clearing an earlier delta");
          const { body } = await blobs().fetch(blobKey, ctx.signal);
          // the engine unpacks it within the container's own root (a link is never followed out)
          await container.putArchive(body, { path: HOME });
          const removed = await asPodUser(name, APPLY, [id], "applying the changed files");
          if (releases) await new PodRecord(config, name).importReleases(releases);
          return { removed };
        } finally {
          await asPodUser(name, CLEAN, [id], "removing the delta's spool").catch(() => undefined);
        }
      }),
    ),
  };
}
