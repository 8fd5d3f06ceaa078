import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * The Files endpoints' ops: everything runs as pod_user (uid 1000) inside the running pod, so what
 * a path resolves to (symlinks included) is only ever what that user may touch in the pod's own
 * view of the filesystem. Paths are checked again by the agent (shared/pod-paths.ts).
 *
 * Bytes never travel in these messages: `download` streams a file to the Worker through the relay
 * the Worker named, `receive` streams a relay's bytes into a temp file (the agent's PUT and GET of
 * `/agent/relay/{id}`, see worker/durable-objects/transfer-relay/), which `commit` then puts in
 * place (or `discard` removes). Writing in two steps lets the Worker stream a multipart upload
 * while it arrives, before it knows the whole form (a `path` may come after the file) or the size.
 * Both the JSON `content` routes and the multipart routes use them.
 *
 * A path that does not exist is a result (`found: false`), not an error: the agent's `not_found`
 * means the pod has no container, which the API reports differently from a missing file.
 */

const PodPath = lazy(() => z.string().min(1).max(4096));
/** a relay's id (`{hostId}/{uuid}`); the agent only passes it to the control plane */
const RelayId = lazy(() => z.string().min(1).max(200));

export const FileEntry = lazy(() =>
  z.object({
    name: z.string(),
    /** ls style: `-rw-r--r--`, `drwxr-xr-x`, `lrwxrwxrwx` */
    permissions: z.string(),
    /** bytes (of the link itself for a symlink) */
    size: z.number().int(),
    /** a directory, or a symlink to one */
    isDir: z.boolean(),
  }),
);
export type FileEntry = Built<typeof FileEntry>;

/** the JSON `content` routes refuse files larger than this (use the download route) */
export const FILE_CONTENT_MAX_BYTES = 5 * 1024 * 1024;
/** a directory listing travels in one result; more entries than this is a 400 (list with exec) */
export const FILE_LIST_MAX_ENTRIES = 10_000;

const Found = lazy(() => z.object({ found: z.boolean() }));

export const filesOps = {
  /** the directory's entries, directories first then by name; `found` false when it is missing */
  "pod.files.list": () => ({
    params: z.object({ name: PodName, path: PodPath() }),
    result: Found().extend({ entries: z.array(FileEntry()) }),
  }),
  /**
   * Stream a regular file (symlinks followed, as pod_user) into the relay `relay`; answered once the
   * caller took every byte. A file larger than `maxBytes` is not sent (`sent: false`, `size` says
   * how large it is).
   */
  "pod.files.download": () => ({
    params: z.object({
      name: PodName,
      path: PodPath(),
      relay: RelayId(),
      maxBytes: z.number().int().positive(),
    }),
    result: Found().extend({ size: z.number().int(), sent: z.boolean() }),
  }),
  /**
   * Stream the relay `relay`'s bytes into a new temp file (`.upload-*`) in the directory `dir`
   * (created if missing); answered with its path and size once the relay's stream ended whole. A
   * broken-off stream leaves nothing behind.
   */
  "pod.files.receive": () => ({
    params: z.object({ name: PodName, dir: PodPath(), relay: RelayId() }),
    result: z.object({ temp: z.string(), size: z.number().int() }),
  }),
  /**
   * Put a received temp file (which must hold exactly `size` bytes) in place as `path`: parents
   * created, renamed over the target (readers see the old or the new file, never half; a symlink at
   * `path` is replaced, never written through; an existing file's mode is kept). From another
   * directory it is first moved beside the target, so the last step is one rename.
   */
  "pod.files.commit": () => ({
    params: z.object({ name: PodName, temp: PodPath(), path: PodPath(), size: z.number().int().min(0) }),
    result: z.object({ path: z.string() }),
  }),
  /** remove a received temp file that will not be committed (gone already is fine) */
  "pod.files.discard": () => ({
    params: z.object({ name: PodName, temp: PodPath() }),
    result: z.object({}),
  }),
  /** `rm -rf`; `found` false when nothing was there */
  "pod.files.delete": () => ({
    params: z.object({ name: PodName, path: PodPath() }),
    result: Found(),
  }),
  /** `mv` to a destination that must not exist (its parents are created); `found` is the source's */
  "pod.files.rename": () => ({
    params: z.object({ name: PodName, from: PodPath(), to: PodPath() }),
    result: Found(),
  }),
  /** recursive copy (symlinks copied as links, modes and times kept) to a destination that must not exist */
  "pod.files.copy": () => ({
    params: z.object({ name: PodName, from: PodPath(), to: PodPath() }),
    result: Found(),
  }),
  /** `mkdir -p`: an existing directory is fine */
  "pod.files.mkdir": () => ({
    params: z.object({ name: PodName, path: PodPath() }),
    result: z.object({ path: z.string() }),
  }),
};
