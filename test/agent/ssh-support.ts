import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/**
 * Driving Debian's OpenSSH client against the gateway. Everything is asynchronous on purpose: the
 * gateway runs in the test's own process, so a synchronous spawn would wait on a server it blocks.
 */

export interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Run a program to its end (or `timeoutMs`, then SIGKILL), feeding `input` on stdin. */
export function run(
  cmd: string,
  args: string[],
  opts: { input?: string | Buffer; timeoutMs?: number } = {},
): Promise<Run> {
  return start(cmd, args, opts).done;
}

/** The same, with the child at hand to be stopped early. */
export function start(
  cmd: string,
  args: string[],
  opts: { input?: string | Buffer; timeoutMs?: number } = {},
): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  const done = new Promise<Run>((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") });
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(opts.input ?? "");
  });
  return { child, done };
}

export interface ClientKey {
  path: string;
  /** the `.pub` line: `ssh-ed25519 AAAA… comment` */
  publicKey: string;
}

export async function makeKey(dir: string, name: string): Promise<ClientKey> {
  const path = join(dir, name);
  await promisify(execFile)("ssh-keygen", [
    "-q",
    "-t",
    "ed25519",
    "-N",
    "",
    "-C",
    `${name}@test`,
    "-f",
    path,
  ]);
  return { path, publicKey: (await readFile(`${path}.pub`, "utf8")).trim() };
}

export const tempDir = () => mkdtemp(join(tmpdir(), "podhost-ssh-test-"));

/**
 * OpenSSH options every call shares: no prompts, no agent, only the given key, a private
 * known_hosts. `overrides` replace defaults (for ssh the first value of an option wins, so a later
 * `-o` could not).
 */
export function clientOptions(
  knownHosts: string,
  key: ClientKey,
  overrides: Record<string, string> = {},
): string[] {
  const options: Record<string, string> = {
    StrictHostKeyChecking: "no",
    UserKnownHostsFile: knownHosts,
    GlobalKnownHostsFile: "/dev/null",
    IdentitiesOnly: "yes",
    IdentityAgent: "none",
    BatchMode: "yes",
    LogLevel: "ERROR",
    ConnectTimeout: "10",
    ...overrides,
  };
  return [...Object.entries(options).flatMap(([k, v]) => ["-o", `${k}=${v}`]), "-i", key.path];
}
