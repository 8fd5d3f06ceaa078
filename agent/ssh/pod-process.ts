import { readFile } from "node:fs/promises";
import type { Duplex } from "node:stream";
import type { Exec } from "dockerode";
import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";

export interface TerminalSize {
  cols: number;
  rows: number;
}

export interface PodProcessOptions {
  argv: string[];
  /** `KEY=value` entries added to the container's environment */
  env?: string[];
  /** a terminal inside the container (docker allocates the pty; the stream is then raw, not multiplexed) */
  tty?: TerminalSize;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One SSH session's process inside a pod: a `docker exec` as pod_user in the home directory, with
 * stdin attached. With a terminal, docker allocates the pty inside the container — where the
 * program runs, so `tty`, job control and `stty size` see it directly — and resizes go through the
 * exec resize call. The stream is the hijacked engine connection: bytes in, bytes (or stdout/stderr
 * frames, without a terminal) out; ending it closes the process's stdin.
 */
export class PodProcess {
  private constructor(
    private readonly exec: Exec,
    readonly stream: Duplex,
    readonly tty: boolean,
  ) {}

  static async start(docker: DockerClient, container: string, opts: PodProcessOptions): Promise<PodProcess> {
    const tty = opts.tty !== undefined;
    // The engine sizes an exec's terminal only after it has started (this engine's API has no
    // initial console size), so a quick command would see 0x0: set the size first, in the pty.
    const argv = opts.tty
      ? [
          "sh",
          "-c",
          'stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"',
          "sh",
          String(opts.tty.rows),
          String(opts.tty.cols),
          ...opts.argv,
        ]
      : opts.argv;
    const exec = await docker.getContainer(container).exec({
      Cmd: argv,
      User: "1000:1000",
      WorkingDir: HOME,
      Env: opts.env ?? [],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: tty,
    });
    const stream = (await exec.start({ hijack: true, stdin: true, Tty: tty })) as unknown as Duplex;
    // Without this every keystroke round trip would wait on Nagle + delayed ACK (~40 ms).
    (stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    const proc = new PodProcess(exec, stream, tty);
    if (opts.tty) await proc.resize(opts.tty);
    return proc;
  }

  /** Set the terminal's size. The engine may not know the process for a moment after start: retry briefly. */
  async resize(size: TerminalSize): Promise<void> {
    if (!this.tty) return;
    for (let i = 0; i < 5; i++) {
      try {
        await this.exec.resize({ h: size.rows, w: size.cols });
        return;
      } catch {
        await sleep(10 * 2 ** i);
      }
    }
  }

  /**
   * Deliver a signal to the process. The engine has no API for it, so it goes from this host by the
   * process's host pid — after checking that the pid still belongs to this container (its cgroup
   * names the container), so a recycled pid can never hit anything else.
   */
  async signal(sig: NodeJS.Signals): Promise<boolean> {
    const info = await this.exec.inspect().catch(() => null);
    if (!info?.Running || !info.Pid) return false;
    const cgroup = await readFile(`/proc/${info.Pid}/cgroup`, "utf8").catch(() => "");
    if (!info.ContainerID || !cgroup.includes(info.ContainerID)) return false;
    try {
      process.kill(info.Pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The exit code once the process has exited: the stream ends a moment before the engine records
   * it. A process that closed its output but lives on is waited for up to `timeoutMs`.
   */
  async exitCode(timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; ; i++) {
      const info = await this.exec.inspect();
      if (!info.Running && info.ExitCode !== null) return info.ExitCode;
      if (Date.now() > deadline) throw new Error("the process outlived its output");
      await sleep(Math.min(5 * 2 ** i, 200));
    }
  }
}
