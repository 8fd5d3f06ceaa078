import { createWriteStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Container } from "dockerode";
import { ZIP_UPLOAD_MAX_BYTES } from "../../shared/limits";
import { inspectZip } from "../../shared/zip/policy";
import { fullDisk, namingFullDisk, sayWhyTarFailed } from "../disk/full";
import { CappedBytes } from "../docker/capped";
import { dockerStatus } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME, podNames } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { AgentError } from "../errors";
import type { BlobStore } from "../transfer/blobs";
import { APP_DIR, DONE_MARK, fileReader, unpackStream } from "./unpack";

/**
 * A staged ZIP archive into a running pod's ~/app: fetched to a temporary file on the host, its
 * table of contents checked again (shared/zip: the agent trusts no caller), streamed as tar into
 * `tar -x` run as pod_user in the pod into a fresh ~/.pod/zip-XXXXXX, then swapped in for ~/app by
 * two renames. ~/app/.env comes along unless the archive brings one. On any failure the staging
 * directory goes and ~/app is untouched; the old app is removed after the swap.
 */

/** the files at the top of ~/app that give a reload something to do (../inside/reload.ts) */
export const RELOAD_MANIFESTS = ["package.json", "requirements.txt", "composer.json", "go.mod"];

/** unpacking up to the policy's 1 GiB, with room for a slow disk */
const UNPACK_TIMEOUT_S = 600;

// Fixed text; the pod's own tar does the writing, as uid 1000, into a directory this run created.
// Exit statuses: 71 tar failed, 72 the stream ended before its `done` mark, 73/74 the swap failed.
const SCRIPT = `set -u
H=${HOME}
umask 022
s=
wipe() { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }
trap '[ -n "$s" ] && wipe "$s"' EXIT
trap 'exit 143' TERM INT HUP
mkdir -p "$H/.pod" || exit 70
for d in "$H"/.pod/zip-*; do [ -d "$d" ] && [ ! -L "$d" ] && wipe "$d"; done
s=$(mktemp -d "$H/.pod/zip-XXXXXX") || exit 70
tar -x -f - -C "$s" --no-same-owner --no-same-permissions --warning=no-timestamp || { ${sayWhyTarFailed('"$s"')}; exit 71; }
if [ ! -f "$s/${DONE_MARK}" ] || [ ! -d "$s/${APP_DIR}" ]; then echo "the archive stream ended early" >&2; exit 72; fi
if [ ! -e "$s/${APP_DIR}/.env" ] && { [ -e "$H/app/.env" ] || [ -L "$H/app/.env" ]; }; then
  cp -a "$H/app/.env" "$s/${APP_DIR}/.env" || exit 73
fi
chmod 755 "$s/${APP_DIR}"
# -T: never move into a directory that appeared at the path meanwhile (an empty one is replaced)
if [ -e "$H/app" ] || [ -L "$H/app" ]; then mv -T "$H/app" "$s/old" || exit 74; fi
if ! mv -T "$s/${APP_DIR}" "$H/app"; then [ -e "$s/old" ] && mv -T "$s/old" "$H/app"; exit 74; fi
echo swapped
for f in ${RELOAD_MANIFESTS.join(" ")}; do [ -f "$H/app/$f" ] && echo "manifest $f"; done
exit 0`;

/** Stream the staged blob into a file of its own, refusing more than an upload may hold. */
async function fetchArchive(blobs: BlobStore, key: string, file: string, signal: AbortSignal) {
  const { body } = await blobs.fetch(key, signal);
  let size = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > ZIP_UPLOAD_MAX_BYTES) {
        done(
          new AgentError(
            "payload_too_large",
            `zip: the archive is larger than ${ZIP_UPLOAD_MAX_BYTES} bytes`,
          ),
        );
        return;
      }
      done(null, chunk);
    },
  });
  await pipeline(body, cap, createWriteStream(file, { mode: 0o600 }), { signal });
  return size;
}

export interface DeployResult {
  files: number;
  bytes: number;
}

export interface Unpacked extends DeployResult {
  /** which of RELOAD_MANIFESTS the new ~/app has */
  manifests: string[];
}

export async function deployArchive(
  deps: { exec: StreamExecutor; blobs?: BlobStore; prefix: string },
  pod: string,
  blobKey: string,
  signal: AbortSignal,
): Promise<DeployResult> {
  const staged = await stageArchive(deps, blobKey, signal);
  try {
    const { files, bytes } = await unpackStaged(deps, pod, staged, signal);
    return { files, bytes };
  } finally {
    await staged.dispose();
  }
}

/** A staged archive fetched to the host and checked, ready to unpack; `dispose` removes the file. */
export interface StagedArchive {
  file: string;
  manifest: Parameters<typeof unpackStream>[1];
  dispose(): Promise<void>;
}

/**
 * Fetch and check a staged archive, before the pod it goes into runs (a create fetches it while
 * the container is made and started).
 */
export async function stageArchive(
  deps: { blobs?: BlobStore },
  blobKey: string,
  signal: AbortSignal,
): Promise<StagedArchive> {
  if (!deps.blobs) throw new AgentError("unavailable", "this agent has no connection to fetch staged blobs");
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-zip-"));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    const file = path.join(dir, "archive.zip");
    const size = await fetchArchive(deps.blobs, blobKey, file, signal);
    const handle = await open(file, "r");
    let manifest: ReturnType<typeof inspectZip>;
    try {
      manifest = inspectZip(fileReader(handle.fd, size));
    } finally {
      await handle.close();
    }
    if (!manifest.ok) throw new AgentError(manifest.code, manifest.message);
    return { file, manifest: manifest.value, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** A staged archive into the running pod's ~/app (the swap described at the top). */
export function unpackStaged(
  deps: { exec: StreamExecutor; prefix: string },
  pod: string,
  staged: StagedArchive,
  signal: AbortSignal,
): Promise<Unpacked> {
  return unpackIntoPod(deps.exec, deps.prefix, pod, staged.file, staged.manifest, signal);
}

/**
 * A staged archive as ~/app of a home this create made, before the pod's first start: the image's
 * default app is removed on the host (`home`, the volume's directory, holds only what the engine
 * seeded from the image), and the engine writes the archive into the stopped container as for
 * `docker cp` (no `done` mark: a stream cut short fails the create, which removes the volume; the
 * owner is the tar's, pod_user, and the modes are the policy's 755/644). The pod then starts on it:
 * no process in the pod, and its vhost can be rendered while it starts. `env`: whether the archive
 * brings its own ~/app/.env (which then wins over the spec's, as it does in the swap above).
 */
export async function preloadStaged(
  container: Container,
  home: string,
  staged: StagedArchive,
): Promise<Unpacked & { env: boolean }> {
  await rm(path.join(home, APP_DIR), { recursive: true, force: true });
  const tar = unpackStream(staged.file, staged.manifest, { doneMark: false });
  try {
    await container.putArchive(tar.stream, { path: HOME });
  } catch (err) {
    throw tar.failure() ?? err;
  } finally {
    tar.stream.destroy();
  }
  const failure = tar.failure();
  if (failure) throw failure;
  const top = staged.manifest.items.filter((item) => !item.path.includes("/"));
  const topFiles = new Set(top.flatMap((item) => (item.type === "file" ? [item.path] : [])));
  return {
    files: tar.stats.files,
    bytes: tar.stats.bytes,
    manifests: RELOAD_MANIFESTS.filter((f) => topFiles.has(f)),
    env: top.some((item) => item.path === ".env"),
  };
}

async function unpackIntoPod(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  file: string,
  manifest: Parameters<typeof unpackStream>[1],
  signal: AbortSignal,
): Promise<Unpacked> {
  const tar = unpackStream(file, manifest);
  const timeout = AbortSignal.any([signal, AbortSignal.timeout((UNPACK_TIMEOUT_S + 30) * 1000)]);
  try {
    const run = await exec(
      podNames(prefix, pod).container,
      [TIMEOUT, "-k", "5", String(UNPACK_TIMEOUT_S), SH, "-c", SCRIPT, "sh"],
      { workingDir: HOME, stdin: tar.stream, signal: timeout },
    ).catch((err: unknown) => {
      if (dockerStatus(err) === 409)
        throw new AgentError("bad_request", "pod is not running; start it first");
      throw err;
    });
    const out = new CappedBytes(16 * 1024); // the script's one word
    run.stdout.on("data", out.push);
    run.stdout.on("error", () => undefined); // the same failure settles `done` below
    let result: { exitCode: number; stderr: string };
    try {
      result = await run.done;
    } catch (err) {
      throw tar.failure() ?? err;
    }
    // The archive's own fault first: a lying entry ends the stream, and tar then fails too.
    const failure = tar.failure();
    if (failure) throw failure;
    if (result.exitCode !== 0 || !out.text().includes("swapped")) {
      const said = `unpacking the archive into pod ${pod} failed (exit ${result.exitCode}): ${result.stderr.trim().slice(-300)}`;
      // a full disk is the tenant's to free (409), not our failure
      throw new AgentError(fullDisk(said) ? "conflict" : "internal", namingFullDisk(said));
    }
    const manifests = out
      .text()
      .split("\n")
      .flatMap((line) => (line.startsWith("manifest ") ? [line.slice("manifest ".length)] : []))
      .filter((f) => RELOAD_MANIFESTS.includes(f));
    return { files: tar.stats.files, bytes: tar.stats.bytes, manifests };
  } finally {
    tar.stream.destroy();
  }
}
