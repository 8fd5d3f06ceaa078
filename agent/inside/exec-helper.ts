import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { CappedBytes } from "../docker/capped";
import type { ExecResult } from "../docker/exec";
import { HOME } from "../docker/naming";
import { PYTHON3 } from "../docker/pod-bin";
import type { RuncContainers } from "../docker/runc";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { EXEC_HELPER_SOURCE } from "./exec-helper-source";

/**
 * One command helper per pod that runs commands (issue #30 item 3): a process started once in the
 * pod's container with `runc exec` as pod_user, which then starts each command itself (fork and
 * exec of `timeout -k 5 -- <s> argv…` in the workdir), so a command no longer pays `runc`'s own
 * start (a Go binary that re-executes itself and joins the container's namespaces: 50-60 ms on a
 * quiet machine, several times that on a busy one) but a fork in the pod (~1-4 ms).
 *
 * What a command gets is what `runc exec` gave it: the helper was started by runc exec with the
 * container's namespaces, cgroups, capabilities (none), no_new_privs, seccomp profile, environment
 * (PATH included) and pod_user, and its children inherit all of it. The workdir is entered in the
 * child as pod_user (a workdir the user cannot enter is refused, as the `sh` prologue refused it);
 * `timeout` kills the command's whole group at its end (124, 137 after the KILL); stdin is
 * /dev/null; each stream keeps its first `maxOutputBytes`, the rest counted; a child the command
 * left in the background holds the answer up at most 2 s after the command exited.
 *
 * The helper lives in the tenant's pod, so the pod's own processes (same user) can stop or trace
 * it: all they can change is the answers about their own pod's commands. What it sends the agent is
 * parsed as untrusted (one JSON object a line, at most MAX_LINE bytes, else the helper is stopped).
 * It costs the pod ~10 MB of memory (RSS) and a process while it is there: it is let go after IDLE_MS
 * without a command (its request pipe closed; it exits once its commands are done), and it dies
 * with the container. Commands go to a helper only once it said it is ready: a pod's first command
 * runs the old way (`runc exec` of the `sh` prologue, ./command.ts) while its helper starts beside
 * it, so the helper's own start never adds to a command's time. A command is never run twice: one
 * the helper may have started when it died is answered "outcome unknown" (503).
 */

/** a helper without a command for this long is let go */
export const IDLE_MS = 60_000;
/** the longest line a helper may send (a 64 KiB chunk of output is ~87 KiB of base64) */
const MAX_LINE = 256 * 1024;

export interface HelperRun {
  /** the argv to run (the user's, looked up on the pod's PATH by timeout) */
  command: string[];
  workdir: string;
  timeoutS: number;
  maxOutputBytes: number;
  signal: AbortSignal;
}

/** What a run came to: a result, the workdir refused, or not started (run it the old way). */
export type HelperOutcome =
  | { kind: "done"; result: ExecResult }
  | { kind: "no-workdir" }
  | { kind: "not-started" };

interface Waiter {
  out: CappedBytes;
  err: CappedBytes;
  settle(outcome: HelperOutcome | Error): void;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");
const count = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0);

class Helper {
  private readonly child: ChildProcess;
  private readonly requests: Writable;
  private readonly waiters = new Map<number, Waiter>();
  private nextId = 1;
  private ready = false;
  /** no new commands (let go, or ended) */
  private closed = false;
  /** its process ended or was stopped: nothing more is read */
  private dead = false;
  private idle: NodeJS.Timeout | undefined;
  private readonly stderr = new CappedBytes(2048);

  constructor(
    runc: RuncContainers,
    readonly id: string,
    private readonly log: Logger,
    private readonly onGone: (h: Helper) => void,
    private readonly idleMs: number,
  ) {
    this.child = runc.spawn(id, [PYTHON3, "-I", "-S", "-c", EXEC_HELPER_SOURCE], {
      user: "1000:1000",
      cwd: HOME,
      extraFds: 2,
    });
    this.child.stdin?.on("error", () => undefined);
    this.child.stdin?.end();
    this.child.stdout?.resume();
    this.child.stderr?.on("data", this.stderr.push);
    this.child.once("error", (error) => this.die(`could not start: ${error.message}`));
    this.requests = this.child.stdio[3] as Writable;
    this.requests.on("error", () => undefined);
    const answers = this.child.stdio[4] as Readable;
    answers.on("error", () => undefined);
    let parts: Buffer[] = [];
    let size = 0;
    answers.on("data", (chunk: Buffer) => {
      let from = 0;
      for (let nl = chunk.indexOf(10); nl !== -1 && !this.dead; nl = chunk.indexOf(10, from)) {
        parts.push(chunk.subarray(from, nl));
        const line = Buffer.concat(parts);
        parts = [];
        size = 0;
        from = nl + 1;
        if (line.length > MAX_LINE) {
          this.stop("a line over the limit");
          return;
        }
        this.onLine(line);
      }
      if (this.dead || from === chunk.length) return;
      size += chunk.length - from;
      if (size > MAX_LINE) {
        this.stop("a line over the limit");
        return;
      }
      parts.push(Buffer.from(chunk.subarray(from)));
    });
    // every answer is read before the pipe ends: only then are the waiters left failed
    answers.once("close", () => this.die("exited"));
  }

  get busy(): boolean {
    return this.waiters.size > 0;
  }

  /** whether it ended before it said it was ready (so it read no command) */
  get neverReady(): boolean {
    return this.dead && !this.ready;
  }

  /** it said it was ready and takes commands */
  get usable(): boolean {
    return this.ready && !this.closed;
  }

  run(q: HelperRun): Promise<HelperOutcome> {
    if (this.closed) return Promise.resolve({ kind: "not-started" });
    clearTimeout(this.idle);
    const id = this.nextId++;
    return new Promise<HelperOutcome>((resolve, reject) => {
      const onAbort = () => {
        if (!this.waiters.delete(id)) return;
        this.send({ k: id });
        reject(q.signal.reason ?? new Error("aborted"));
        this.armIdle();
      };
      this.waiters.set(id, {
        out: new CappedBytes(q.maxOutputBytes),
        err: new CappedBytes(q.maxOutputBytes),
        settle: (outcome) => {
          q.signal.removeEventListener("abort", onAbort);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      });
      q.signal.addEventListener("abort", onAbort, { once: true });
      this.send({
        id,
        argv: q.command.map(b64),
        cwd: b64(q.workdir),
        t: q.timeoutS,
        cap: q.maxOutputBytes,
      });
      if (q.signal.aborted) onAbort();
    });
  }

  /** let go: no more requests; the helper exits once its commands are done */
  release(): void {
    if (this.closed) return;
    this.close();
    this.requests.end();
  }

  private send(message: Record<string, unknown>): void {
    if (!this.closed) this.requests.write(`${JSON.stringify(message)}\n`);
  }

  private onLine(line: Buffer): void {
    let m: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line.toString("utf8"));
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
        throw new Error("not an object");
      m = parsed as Record<string, unknown>;
    } catch {
      this.stop("a line that is no JSON object");
      return;
    }
    if (m.ready === 1) {
      this.ready = true;
      this.armIdle();
      return;
    }
    const waiter = typeof m.id === "number" ? this.waiters.get(m.id) : undefined;
    if (!waiter) return; // an aborted command's late lines
    if (typeof m.o === "string") waiter.out.push(Buffer.from(m.o, "base64"));
    else if (typeof m.e === "string") waiter.err.push(Buffer.from(m.e, "base64"));
    else if ("x" in m) {
      this.waiters.delete(m.id as number);
      this.armIdle();
      if (m.cwd === true) {
        waiter.settle({ kind: "no-workdir" });
        return;
      }
      const x = m.x;
      if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x > 255) {
        waiter.settle(
          new AgentError(
            "internal",
            `the pod's command helper could not run the command: ${String(m.msg ?? x).slice(0, 200)}`,
          ),
        );
        return;
      }
      const om = Array.isArray(m.om) ? m.om : [];
      const stdoutBytes = waiter.out.bytes();
      waiter.settle({
        kind: "done",
        result: {
          exitCode: x,
          stdout: stdoutBytes.toString("utf8"),
          stdoutBytes,
          stderr: waiter.err.text(),
          omitted: { stdout: waiter.out.omitted + count(om[0]), stderr: waiter.err.omitted + count(om[1]) },
        },
      });
    }
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    if (this.busy || this.closed) return;
    this.idle = setTimeout(() => {
      if (!this.busy) this.release();
    }, this.idleMs);
    this.idle.unref();
  }

  /** a helper that breaks the protocol is stopped (it runs in the tenant's pod: it may be anything) */
  private stop(why: string): void {
    this.log.warn("exec helper stopped", { container: this.id, why });
    this.die(why);
    this.child.kill("SIGKILL");
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idle);
    this.onGone(this);
  }

  private die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    this.close();
    for (const w of this.waiters.values()) {
      w.settle(
        this.ready
          ? new AgentError(
              "unavailable",
              "the pod's command helper ended while the command ran (did the pod stop or restart?); its outcome is unknown",
            )
          : { kind: "not-started" },
      );
    }
    if (this.waiters.size > 0 || !this.ready)
      this.log.info("exec helper ended", { container: this.id, why, stderr: this.stderr.text() });
    this.waiters.clear();
    for (const stream of this.child.stdio) stream?.destroy();
  }
}

/** The pods' command helpers on this host, by runc's container id: started on a pod's first command. */
export class ExecHelpers {
  private readonly helpers = new Map<string, Helper>();
  /** containers whose helper ended before it was ready (no python3?): their commands go the old way */
  private readonly unfit = new Set<string>();

  constructor(
    private readonly runc: RuncContainers,
    private readonly log: Logger,
    private readonly idleMs = IDLE_MS,
  ) {}

  /**
   * Runs one command through the container's helper once it is ready. Until then (a pod's first
   * command, or the first after the helper was let go) the answer is "not-started": the caller runs
   * the command the old way and then `start`s a helper for the next ones, so that the helper's start
   * (a runc exec and Python's, 100-300 ms on a busy host) neither adds to nor competes with a command.
   */
  run(id: string, q: HelperRun): Promise<HelperOutcome> {
    const helper = this.helpers.get(id);
    return helper?.usable ? helper.run(q) : Promise.resolve({ kind: "not-started" });
  }

  /**
   * One of the agent's own commands (absolute paths, its own script) run by the container's helper
   * when it is ready: a fork in the pod, no runc exec. null when it is not ready (`start`: it starts
   * now, for the next time) or the run failed (the helper ended, the timeout): the caller then runs
   * the command the usual way, so this is only for commands that may run twice (reads).
   */
  async runOwn(
    runc: RuncContainers,
    container: string,
    argv: string[],
    o: { timeoutS: number; maxOutputBytes: number; start: boolean },
  ): Promise<ExecResult | null> {
    const id = await runc.idOf(container).catch(() => null);
    if (!id) return null;
    const outcome = await this.run(id, {
      command: argv,
      workdir: HOME,
      timeoutS: o.timeoutS,
      maxOutputBytes: o.maxOutputBytes,
      signal: AbortSignal.timeout((o.timeoutS + 15) * 1000),
    }).catch(() => null);
    if (outcome?.kind === "not-started" && o.start) this.start(id);
    return outcome?.kind === "done" ? outcome.result : null;
  }

  /** Starts the container's helper unless it has one (or its helper could not start before). */
  start(id: string): void {
    if (this.helpers.has(id) || this.unfit.has(id)) return;
    this.helpers.set(id, new Helper(this.runc, id, this.log, (h) => this.forget(h), this.idleMs));
  }

  /** whether the container's helper is ready for commands */
  isReady(id: string): boolean {
    return this.helpers.get(id)?.usable ?? false;
  }

  /** how many helpers are running (for tests and the agent's own figures) */
  get size(): number {
    return this.helpers.size;
  }

  /** lets every helper go (the agent stops) */
  close(): void {
    for (const h of [...this.helpers.values()]) h.release();
  }

  private forget(h: Helper): void {
    if (this.helpers.get(h.id) === h) this.helpers.delete(h.id);
    if (h.neverReady && this.unfit.size < 10_000) this.unfit.add(h.id);
  }
}
