import { spawn } from "node:child_process";
import { Transform } from "node:stream";
import { CappedBytes } from "../docker/capped";
import { AgentError } from "../errors";
import { DeployFailure } from "./failure";
import { gitEnv, MAX_STDERR, runGit } from "./fetch";

/**
 * Reading a fetched commit on the host: its root entries and small root files (what detection and
 * the dependency key read), and its files as a tar stream (what the build container unpacks).
 */

/**
 * Root entries of the commit's tree and the text of the root files `wanted` (name → the most bytes
 * read; a larger file reads as absent): one `git ls-tree` with sizes, then one `git cat-file
 * --batch` for all of them (each git process is a few milliseconds on a deploy's path).
 */
export async function treeReader(
  repoDir: string,
  sha: string,
  home: string,
  wanted: ReadonlyMap<string, number>,
) {
  const env = gitEnv({}, false, home);
  const opts = { timeoutMs: 30_000 };
  const ls = await runGit(["-C", repoDir, "ls-tree", "-z", "-l", sha], env, {
    ...opts,
    maxStdout: 4 * 1024 * 1024,
  });
  if (ls.code !== 0)
    throw new AgentError("internal", `git ls-tree failed: ${ls.stderr.trim().slice(0, 300)}`);
  const names = new Set<string>();
  const blobs = new Map<string, string>();
  // "<mode> <type> <object> <size>\t<name>", NUL-terminated
  for (const entry of ls.stdout.toString("utf8").split("\0")) {
    const tab = entry.indexOf("\t");
    if (tab < 0) continue;
    const name = entry.slice(tab + 1);
    names.add(name);
    const [, type, object, size] = entry.slice(0, tab).split(/ +/);
    const max = wanted.get(name);
    if (type === "blob" && object && max !== undefined && Number(size) <= max) blobs.set(name, object);
  }
  const text = new Map<string, string>();
  const objects = [...blobs.values()];
  if (objects.length > 0) {
    const batch = await runGit(["-C", repoDir, "cat-file", "--batch"], env, {
      ...opts,
      stdin: `${objects.join("\n")}\n`,
      maxStdout: [...blobs.keys()].reduce((n, name) => n + (wanted.get(name) ?? 0) + 128, 0),
    });
    if (batch.code !== 0)
      throw new AgentError("internal", `git cat-file failed: ${batch.stderr.trim().slice(0, 300)}`);
    const contents = parseBatch(batch.stdout);
    for (const [name, object] of blobs) {
      const body = contents.get(object);
      if (body) text.set(name, body.toString("utf8"));
    }
  }
  /** a wanted root file's text, null when absent or too large */
  const read = (name: string): string | null => text.get(name) ?? null;
  return { names, read };
}

/** `git cat-file --batch` output: "<object> <type> <size>\n<contents>\n" per object. */
function parseBatch(out: Buffer): Map<string, Buffer> {
  const found = new Map<string, Buffer>();
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(10, at);
    if (nl < 0) break;
    const [object, type, size] = out.subarray(at, nl).toString("latin1").split(" ");
    at = nl + 1;
    if (type === "missing" || !object || size === undefined) continue;
    const n = Number(size);
    found.set(object, out.subarray(at, at + n));
    at += n + 1;
  }
  return found;
}

/**
 * `git archive` of the commit as a tar stream, counted: past `maxBytes` the stream fails with
 * `repo_too_large` (a small pack can hold huge, well-compressed files).
 */
export function archiveStream(repoDir: string, sha: string, home: string, maxBytes: number) {
  const child = spawn("git", ["-C", repoDir, "archive", "--format=tar", sha], {
    env: gitEnv({}, false, home),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const err = new CappedBytes(MAX_STDERR);
  child.stderr.on("data", err.push);
  let bytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        child.kill("SIGKILL");
        done(
          new DeployFailure(
            "repo_too_large",
            `the commit's files exceed ${Math.round(maxBytes / 1024 / 1024)} MiB`,
          ),
        );
        return;
      }
      done(null, chunk);
    },
  });
  child.stdout.pipe(counted);
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  child.once("error", (e) => counted.destroy(e));
  void exited.then((code) => {
    if (code !== 0 && !counted.destroyed)
      counted.destroy(new AgentError("internal", `git archive failed: ${err.text().trim().slice(0, 300)}`));
  });
  return { stream: counted, kill: () => child.kill("SIGKILL"), bytes: () => bytes };
}
