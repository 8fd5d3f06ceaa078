import { type ChildProcess, spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { constants } from "node:os";
import type { Readable } from "node:stream";
import { CappedBytes } from "./capped";
import type { DockerClient } from "./client";
import type { ExecResult } from "./exec";

/** how long a command's output is still read after it exited (see `RuncContainers.run`) */
const EXITED_OUTPUT_GRACE_MS = 2_000;

/** where Docker's runc keeps the state of the engine's containers */
export const DOCKER_RUNC_ROOT = "/run/docker/runtime-runc/moby";

/**
 * Processes started in a pod's container with `runc exec` rather than through the engine, for bulk
 * bytes (file transfers, scp, sftp): the process's stdin and stdout are then this agent's own pipes,
 * where the engine and its shim would copy every byte once more (measured: 32 MB into `cat` in
 * ~0.1 s against ~0.2 s through the engine). Isolation is the container's own either way: runc exec
 * joins its namespaces and cgroups and applies its capabilities (none), no_new_privs and seccomp
 * profile, as the engine's exec does (which is runc exec underneath).
 *
 * Short commands gain too (`run`): an exec through the engine is an exec create, a start with a
 * hijacked connection, and polls of the exec's state for the exit code, each an API round trip on
 * top of the same runc exec; here it is one child process whose exit status is the command's.
 */
export class RuncContainers {
  private readonly ids = new Map<string, string>();

  constructor(
    private readonly docker: DockerClient,
    /** runc's state root of the engine's containers */
    private readonly root: string,
    private readonly runc = "runc",
  ) {}

  /**
   * The container's full id when it runs and runc knows it on this host (else null: use the engine).
   * `known`: its id as the caller has it (the container it just started), which saves an inspect.
   */
  async idOf(container: string, known?: string): Promise<string | null> {
    let id = known ?? this.ids.get(container);
    if (!id) {
      const info = await this.docker.getContainer(container).inspect();
      if (!info.State.Running) return null; // the engine's exec gives the usual "not running" error
      id = info.Id;
    }
    // A stopped container's state is gone; a restarted one keeps its id; a re-created one has a new id.
    const present = await this.has(id);
    if (present) this.ids.set(container, id);
    else this.ids.delete(container);
    return present ? id : null;
  }

  /** whether runc still has the container `id` (gone once it stopped) */
  async has(id: string): Promise<boolean> {
    return access(`${this.root}/${id}/state.json`).then(
      () => true,
      () => false,
    );
  }

  /**
   * `runc exec` of a command whose output is kept as execInContainer keeps it (./exec.ts): the head of
   * each stream up to `maxOutputBytes`, the rest read, counted and dropped; stdin is closed at once.
   * The exit code is the command's (128 + the signal that ended it). An aborted run kills runc and
   * rejects with the signal's reason at once (a process stuck in the kernel is not waited for).
   *
   * runc answers only once every holder of the command's stdout and stderr closed them, and a child
   * the command left in the background (`server &`) may hold them for ever. With `statusFd` the
   * command gets a pipe as fd 3 and writes its exit status there as it ends (see STATUS_FD_PROLOGUE):
   * what it prints within EXITED_OUTPUT_GRACE_MS after that is kept, then the pipes are closed and
   * runc is let go, as the engine ends an exec's stream about 2 s after its process exited. The
   * background child runs on in the container, as it would after `docker exec`.
   */
  run(
    id: string,
    argv: string[],
    opts: {
      user: string;
      cwd: string;
      env?: string[];
      maxOutputBytes: number;
      signal?: AbortSignal;
      statusFd?: boolean;
    },
  ): Promise<ExecResult> {
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<ExecResult>((resolve, reject) => {
      const child = this.spawn(id, argv, { ...opts, extraFds: opts.statusFd ? 1 : 0 });
      const out = new CappedBytes(opts.maxOutputBytes);
      const err = new CappedBytes(opts.maxOutputBytes);
      child.stdout?.on("data", out.push);
      child.stderr?.on("data", err.push);
      child.stdin?.on("error", () => undefined);
      child.stdin?.end();
      let grace: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (exitCode: number) => {
        if (settled) return;
        settled = true;
        clearTimeout(grace);
        signal?.removeEventListener("abort", onAbort);
        const stdoutBytes = out.bytes();
        resolve({
          exitCode,
          stdout: stdoutBytes.toString("utf8"),
          stdoutBytes,
          stderr: err.text(),
          omitted: { stdout: out.omitted, stderr: err.omitted },
        });
      };
      const letGo = () => {
        for (const stream of child.stdio) stream?.destroy();
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      };
      const onAbort = () => {
        if (settled) return;
        settled = true;
        clearTimeout(grace);
        letGo();
        reject(signal?.reason ?? new Error("aborted"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      child.once("error", (error) => {
        if (settled) return;
        settled = true;
        clearTimeout(grace);
        signal?.removeEventListener("abort", onAbort);
        reject(error);
      });
      const status = child.stdio[3] as Readable | null | undefined;
      if (status) {
        const said = new CappedBytes(16);
        status.on("error", () => undefined);
        // A whole line is the status: runc holds its own copy of the pipe, so no end comes before it exits.
        status.on("data", (chunk: Buffer) => {
          said.push(chunk);
          const code = /^(\d{1,3})\n/.exec(said.text())?.[1];
          if (code === undefined || settled || grace) return;
          grace = setTimeout(() => {
            letGo();
            finish(Number(code));
          }, EXITED_OUTPUT_GRACE_MS);
        });
      }
      // "close": the exit status and every byte of both streams are in
      child.once("close", (code, sig) => finish(code ?? 128 + (sig ? constants.signals[sig] : 0)));
    });
  }

  /** `runc exec` of `argv` in the container `id` as `user`, its stdio as pipes. */
  spawn(
    id: string,
    argv: string[],
    opts: { user: string; cwd: string; env?: string[]; extraFds?: number },
  ): ChildProcess {
    const env = (opts.env ?? []).flatMap((e) => ["--env", e]);
    const extra = opts.extraFds ?? 0;
    // fds past stdio: pipes of this agent, passed on to the process as fd 3, 4, … (--preserve-fds)
    const preserve = extra > 0 ? ["--preserve-fds", String(extra)] : [];
    return spawn(
      this.runc,
      ["--root", this.root, "exec", "--user", opts.user, "--cwd", opts.cwd, ...preserve, ...env, id, ...argv],
      { stdio: ["pipe", "pipe", "pipe", ...Array<"pipe">(extra).fill("pipe")] },
    );
  }
}
