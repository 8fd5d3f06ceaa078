import { closeSync, openSync, readFileSync, readSync } from "node:fs";

/**
 * Reads a small kernel file (a cgroup counter, `/proc/<pid>/stat`, `net/dev`: bytes to a few KiB)
 * synchronously, into one buffer kept for the next read.
 *
 * These files stat as 0 bytes, so fs/promises' `readFile` read each with a fresh 64 KiB buffer,
 * and its open/read/close each went through the thread pool with a FileHandle and a few promises:
 * the periodic watch reads ~9 of them per running pod and tick, so a tick with 50 pods made ~17 MB
 * of short-lived buffers, which glibc's malloc kept after the garbage collector let them go (the
 * agent's RSS grew by ~10 MB over its first ticks, bench/agent), and ~4 MB of promise garbage.
 * Files of the kernel's pseudo file systems never wait for a disk: the kernel writes them out as
 * they are read, in microseconds, so the watch reads them in place (one pod's files at a time,
 * giving the event loop back between pods).
 */
const buffer = Buffer.allocUnsafeSlow(16 * 1024);

export function readKernelFile(file: string): string {
  const fd = openSync(file, "r");
  try {
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) return buffer.toString("utf8", 0, length);
      length += n;
      // larger than these files are: the rest as it comes
      if (length === buffer.length) return Buffer.concat([buffer, readFileSync(fd)]).toString("utf8");
    }
  } finally {
    closeSync(fd);
  }
}
