import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { constants } from "node:os";
import type { Duplex, Readable, Writable } from "node:stream";
import type { Exec } from "dockerode";
import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";
import type { RuncContainers } from "../docker/runc";
import { demux, pump } from "./streams";

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

/** One SSH session's process inside a pod, as the session sees it. */
export interface PodProcess {
  readonly tty: boolean;
  /** copy the process's output into the channel; resolves when the process closed its output */
  pipeOutput(stdout: Writable, stderr: Writable, onData: () => void): Promise<void>;
  /** copy the channel into the process's stdin; its EOF closes stdin when `endOnEof` */
  pipeInput(from: Readable, onData: () => void, endOnEof: boolean): void;
  resize(size: TerminalSize): Promise<void>;
  signal(sig: NodeJS.Signals): Promise<boolean>;
  /** the exit code once the process has exited (128+n when a signal ended it) */
  exitCode(timeoutMs?: number): Promise<number>;
  /** the client is gone: SIGHUP, and drop the connection to the process */
  hangUp(): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How sessions start processes in a pod's container. A terminal session is a `docker exec` (the
 * engine allocates the pty inside the container). Without a terminal (scp, rsync, sftp, `ssh host
 * cmd`) the bulk bytes are the point: the process is started with `runc exec` when runc knows the
 * container on this host (../docker/runc.ts), its stdin and stdout then this agent's own pipes.
 */
export class PodProcessLauncher {
  constructor(
    private readonly docker: DockerClient,
    /** null: the engine only */
    private readonly runc: RuncContainers | null,
  ) {}

  async start(container: string, opts: PodProcessOptions): Promise<PodProcess> {
    if (!opts.tty && this.runc) {
      const id = await this.runc.idOf(container);
      if (id) return RuncProcess.start(this.runc, id, opts);
    }
    return DockerExecProcess.start(this.docker, container, opts);
  }
}

class RuncProcess implements PodProcess {
  readonly tty = false;
  private readonly exited: Promise<number>;

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
      child.once("error", () => resolve(255));
    });
  }

  static start(runc: RuncContainers, id: string, opts: PodProcessOptions): PodProcess {
    return new RuncProcess(runc.spawn(id, opts.argv, { user: "1000:1000", cwd: HOME, env: opts.env }));
  }

  pipeOutput(stdout: Writable, stderr: Writable, onData: () => void): Promise<void> {
    const { child } = this;
    const ended = (r: Readable) =>
      new Promise<void>((resolve) => {
        r.once("end", resolve);
        r.once("close", resolve);
        r.once("error", () => resolve());
      });
    // Node's own pipe: its backpressure never loses a 'drain' (pump's deferred pause did, now and
    // then, on a bulk download); runc's chunks are large, so there is nothing to coalesce.
    for (const [from, to] of [
      [child.stdout, stdout],
      [child.stderr, stderr],
    ] as [Readable, Writable][]) {
      from.on("data", onData);
      from.pipe(to, { end: false });
    }
    return Promise.all([ended(child.stdout as Readable), ended(child.stderr as Readable)]).then(
      () => undefined,
    );
  }

  pipeInput(from: Readable, onData: () => void, endOnEof: boolean): void {
    const stdin = this.child.stdin as Writable;
    stdin.on("error", () => undefined); // the process may exit without reading everything
    from.on("data", onData);
    from.pipe(stdin, { end: endOnEof });
  }

  async resize(): Promise<void> {}

  /** runc exec forwards the signals it receives to the process */
  async signal(sig: NodeJS.Signals): Promise<boolean> {
    return this.child.exitCode === null && this.child.kill(sig);
  }

  exitCode(): Promise<number> {
    return this.exited;
  }

  hangUp(): void {
    void this.signal("SIGHUP");
    this.child.stdin?.destroy();
  }
}

/**
 * A `docker exec` as pod_user in the home directory, with stdin attached. With a terminal, docker
 * allocates the pty inside the container — where the program runs, so `tty`, job control and `stty
 * size` see it directly — and resizes go through the exec resize call. The stream is the hijacked
 * engine connection: bytes in, bytes (or stdout/stderr frames, without a terminal) out; ending it
 * closes the process's stdin.
 */
class DockerExecProcess implements PodProcess {
  private constructor(
    private readonly exec: Exec,
    private readonly stream: Duplex,
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
    const proc = new DockerExecProcess(exec, stream, tty);
    if (opts.tty) await proc.resize(opts.tty);
    return proc;
  }

  pipeOutput(stdout: Writable, stderr: Writable, onData: () => void): Promise<void> {
    const { stream } = this;
    if (!this.tty) return demux(stream, stdout, stderr, onData);
    return new Promise<void>((resolve) => {
      pump(stream, stdout, onData, false);
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
  }

  pipeInput(from: Readable, onData: () => void, endOnEof: boolean): void {
    pump(from, this.stream, onData, endOnEof);
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

  /** The engine leaves an exec running when its client goes: hang it up like a terminal would. */
  hangUp(): void {
    void this.signal("SIGHUP").finally(() => this.stream.destroy());
  }
}
