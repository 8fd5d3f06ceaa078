import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RECEIVE } from "../../agent/files/receive";

/**
 * The receiving process of an upload (agent/files/receive.ts RECEIVE), run by the same `sh` as in
 * the pods (dash) with the pipes the agent gives it: stdin (the bytes), stdout (the temp file's
 * name, then "received"), fd 3 (the verdict). The agent dying closes the agent's ends of all three;
 * the part-written temp file must not outlive it (test/chaos/upload.test.ts found one in ~/app).
 */
describe("an upload's receiving process", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "podhost-receive-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const start = (fd3 = true) => {
    const child = spawn("/bin/sh", ["-c", RECEIVE, "sh", dir], {
      stdio: fd3 ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let out = "";
    const stdout = child.stdout as Readable;
    stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const printed = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (out.includes(text)) {
            stdout.off("data", check);
            resolve();
          }
        };
        stdout.on("data", check);
        check();
      });
    return { child, exited, printed, out: () => out };
  };
  /** what the kernel does to the agent's ends of the pipes when the agent is SIGKILLed */
  const agentDies = (child: ChildProcess) => {
    child.stdin?.destroy();
    child.stdout?.destroy();
    (child.stdio[3] as Writable | undefined)?.destroy();
  };
  const temps = async () => (await readdir(dir)).filter((f) => f.startsWith(".upload-"));

  it("the agent gone mid-stream: the part-written temp file is removed", async () => {
    const p = start();
    p.child.stdin?.write(Buffer.alloc(256 * 1024, 1));
    await p.printed("\n");
    expect(await temps()).toHaveLength(1);
    agentDies(p.child);
    await p.exited;
    expect(await temps()).toEqual([]);
  });

  it("the agent gone once every byte is in, before its verdict: the temp file is removed", async () => {
    const p = start();
    p.child.stdin?.end(Buffer.alloc(64 * 1024, 2));
    await p.printed("received\n");
    expect(await temps()).toHaveLength(1);
    (p.child.stdio[3] as Writable).destroy();
    await p.exited;
    expect(await temps()).toEqual([]);
  });

  it("a commit verdict still puts the file in place, and the temp file is gone", async () => {
    await writeFile(path.join(dir, "target.txt"), "old");
    const p = start();
    p.child.stdin?.end("new content");
    await p.printed("received\n");
    const temp = p.out().split("\n")[0] as string;
    (p.child.stdio[3] as Writable).end(`commit\n${temp}\n${dir}/target.txt\n${dir}\n11\n`);
    expect(await p.exited).toBe(0);
    expect(await readFile(path.join(dir, "target.txt"), "utf8")).toBe("new content");
    expect(await temps()).toEqual([]);
  });

  it("without a verdict pipe (the engine's exec) the temp file stays for the separate committer", async () => {
    const p = start(false);
    p.child.stdin?.end("bytes");
    expect(await p.exited).toBe(0);
    expect(await temps()).toHaveLength(1);
  });
});
