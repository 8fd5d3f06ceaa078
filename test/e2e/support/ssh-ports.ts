import { mkdir, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * SSH port blocks for test stacks (stack.ts). Every pod gets a port from its host's block and the
 * host's gateway listens there on 127.0.0.1, so two stacks up at once on one machine (test files,
 * benches, other work trees) must never share a block: the second gateway cannot listen
 * (EADDRINUSE), and an ssh to its pod's port reaches the other stack's pod instead — "Permission
 * denied (publickey)" for a key that was added correctly. That was the CLI e2e's `ssh -- true`
 * failing under load: another stack held 22000.
 *
 * A block is reserved by creating its lock file (exclusively) in a directory of the OS temp dir,
 * holding the reserving process's pid; a lock whose process is gone is taken over; the stack
 * releases its blocks when it stops. Blocks lie in 22000–32499: under Linux's ephemeral range
 * (32768+, where `freePort` and outgoing connections get theirs).
 */

const DIR = path.join(tmpdir(), "podhost-e2e-ssh-ports");
const FIRST = 22_000;
export const SSH_BLOCK_SIZE = 500;
const BLOCKS = 21;

export interface SshPortBlock {
  min: number;
  max: number;
  release(): Promise<void>;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

async function tryLock(file: string): Promise<boolean> {
  try {
    const handle = await open(file, "wx");
    await handle.writeFile(String(process.pid));
    await handle.close();
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  }
}

/** A block no other live process holds; starts at a random one so that stacks rarely contend. */
export async function reserveSshPortBlock(): Promise<SshPortBlock> {
  await mkdir(DIR, { recursive: true });
  const start = Math.floor(Math.random() * BLOCKS);
  for (let i = 0; i < BLOCKS; i++) {
    const k = (start + i) % BLOCKS;
    const file = path.join(DIR, `block-${k}`);
    let got = await tryLock(file);
    if (!got) {
      const holder = Number((await readFile(file, "utf8").catch(() => "")).trim());
      // a lock being written has no pid yet: left to its writer
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
        await rm(file, { force: true });
        got = await tryLock(file);
      }
    }
    if (got) {
      const min = FIRST + k * SSH_BLOCK_SIZE;
      return { min, max: min + SSH_BLOCK_SIZE - 1, release: () => rm(file, { force: true }) };
    }
  }
  throw new Error(`every SSH port block in ${DIR} is held by a live process: too many stacks at once`);
}
