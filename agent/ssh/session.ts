import { constants } from "node:os";
import type { ServerChannel, Session } from "ssh2";
import { dockerMessage, dockerStatus, engineReason } from "../docker/client";
import type { Logger } from "../logger";
import type { KeyOptions } from "./key-options";
import type { PodProcess, PodProcessLauncher, TerminalSize } from "./pod-process";
import { flushed } from "./streams";

export const SFTP_SERVER = "/usr/lib/openssh/sftp-server";

export interface SessionContext {
  processes: PodProcessLauncher;
  pod: string;
  container: string;
  log: Logger;
  /** data moved in either direction: the connection is not idle */
  touch(): void;
  /** output for the client follows in this turn of the event loop: send it in one write */
  coalesceOutput(): void;
  /** the options of the authorized_keys line the client logged in with */
  options: KeyOptions;
  /**
   * The client sent the pod's process input, or the process ended: either may have changed files in
   * the pod, authorized_keys among them (the gateway's copy is checked again at the next login).
   */
  podActivity?(): void;
}

/** Client environment passed on, as OpenSSH's default `AcceptEnv LANG LC_*`. */
const ACCEPTED_ENV = /^(LANG|LC_[A-Z]+)$/;
const SAFE_ENV_VALUE = /^[A-Za-z0-9_.@-]{0,64}$/;
const SAFE_TERM = /^[A-Za-z0-9_.+-]{1,64}$/;

interface Terminal extends TerminalSize {
  term: string;
}

const clampSize = (n: number, fallback: number) =>
  Number.isInteger(n) && n > 0 && n < 10_000 ? n : fallback;

/** `INT` or `SIGINT` → `SIGINT`, when it is a signal this platform knows. */
function signalName(name: string): NodeJS.Signals | null {
  const sig = (
    name.toUpperCase().startsWith("SIG") ? name.toUpperCase() : `SIG${name.toUpperCase()}`
  ) as NodeJS.Signals;
  return sig in constants.signals ? sig : null;
}

/**
 * One SSH session channel: a terminal request, window changes, environment and signals, then one
 * of shell (`bash -l`), exec (`bash -c <command>`) or the sftp subsystem, run as pod_user in the
 * pod's container. The process's exit status (or the signal that ended it) goes back to the client.
 * Agent and X11 forwarding are refused. The key's options apply as in sshd: `no-pty` refuses the
 * terminal request; a forced `command=` runs instead of the shell, the command or the subsystem,
 * with what the client asked for in SSH_ORIGINAL_COMMAND.
 */
export function serveSession(session: Session, ctx: SessionContext): void {
  let terminal: Terminal | null = null;
  const env: string[] = [];
  let proc: PodProcess | null = null;
  /** the last signal the client asked for, to report "killed by it" instead of 128+n */
  let forwarded: NodeJS.Signals | null = null;

  session.on("pty", (accept, reject, info) => {
    if (ctx.options.noPty || !SAFE_TERM.test(info.term || "xterm")) return reject?.();
    terminal = { term: info.term || "xterm", cols: clampSize(info.cols, 80), rows: clampSize(info.rows, 24) };
    accept?.();
  });

  session.on("window-change", (accept, _reject, info) => {
    if (terminal) {
      terminal.cols = clampSize(info.cols, terminal.cols);
      terminal.rows = clampSize(info.rows, terminal.rows);
      void proc?.resize(terminal);
    }
    accept?.();
  });

  session.on("env", (accept, reject, info) => {
    if (!ACCEPTED_ENV.test(info.key) || !SAFE_ENV_VALUE.test(info.val)) return reject?.();
    env.push(`${info.key}=${info.val}`);
    accept?.();
  });

  session.on("signal", (accept, reject, info) => {
    const sig = signalName(info.name);
    if (!sig || !proc) return reject?.();
    forwarded = sig;
    void proc.signal(sig);
    accept?.();
  });

  session.on("x11", (_accept, reject) => reject?.());
  session.on("auth-agent", (_accept, reject) => reject?.());

  const run = async (channel: ServerChannel, argv: string[], withTerminal: boolean, extraEnv: string[]) => {
    const tty = withTerminal ? terminal : null;
    const nl = tty ? "\r\n" : "\n";
    let closed = false;
    let exited = false;
    const hangUp = (p: PodProcess) => p.hangUp();
    channel.once("close", () => {
      closed = true;
      if (proc && !exited) hangUp(proc);
    });
    try {
      proc = await ctx.processes.start(ctx.container, {
        argv,
        env: [...(tty ? [`TERM=${tty.term}`] : []), ...env, ...extraEnv],
        tty: tty ?? undefined,
      });
    } catch (err) {
      const status = dockerStatus(err);
      const message =
        status === 404 || status === 409
          ? `pod ${ctx.pod} is not running; start it first`
          : `podhost: the session could not start (${engineReason(err)})`;
      if (status !== 404 && status !== 409)
        ctx.log.error("ssh session start failed", { error: dockerMessage(err) });
      channel.stderr.write(`${message}${nl}`);
      channel.exit(1);
      channel.end();
      return;
    }
    const p = proc;
    if (closed) return hangUp(p); // the client left while the process was being started
    const onOutput = () => {
      ctx.touch();
      ctx.coalesceOutput();
    };
    const output = p.pipeOutput(channel, channel.stderr, onOutput);
    // Client EOF → the process's stdin is closed (scp and sftp-server rely on it). Not with a
    // terminal: closing it would hang the session up (`ssh -tt host cmd </dev/null` must run to its
    // end), and sshd keeps its pty open then too.
    p.pipeInput(
      channel,
      () => {
        ctx.touch();
        ctx.podActivity?.();
      },
      !p.tty,
    );
    await output;
    if (closed) return;
    let code: number;
    try {
      code = await p.exitCode();
    } catch (err) {
      ctx.log.warn("ssh session: exit code unavailable", { error: String(err) });
      code = 255;
    }
    exited = true;
    ctx.podActivity?.();
    await Promise.all([flushed(channel), flushed(channel.stderr)]);
    const sig = forwarded;
    if (sig && code === 128 + constants.signals[sig]) channel.exit(sig.slice(3), false, "");
    else channel.exit(code);
    channel.end();
  };

  /** `original`: the client's command (null for a shell), what a forced command sees of it */
  const start = (channel: ServerChannel, argv: string[], withTerminal: boolean, original: string | null) => {
    const forced = ctx.options.command;
    const launch =
      forced === undefined
        ? run(channel, argv, withTerminal, [])
        : run(
            channel,
            ["bash", "-c", forced],
            withTerminal,
            original === null ? [] : [`SSH_ORIGINAL_COMMAND=${original}`],
          );
    launch.catch((err: unknown) => {
      ctx.log.error("ssh session failed", { error: String(err) });
      channel.destroy();
    });
  };

  session.on("shell", (accept) => start(accept(), ["bash", "-l"], true, null));
  session.on("exec", (accept, _reject, info) => {
    const argv = info.command.trim() ? ["bash", "-c", info.command] : ["bash", "-l"];
    start(accept(), argv, true, info.command);
  });
  // Not the "sftp" event: that one hands over ssh2's own SFTP parser; the raw channel goes to sftp-server.
  session.on("subsystem", (accept, reject, info) => {
    if (info.name !== "sftp") return reject();
    start(accept(), [SFTP_SERVER], false, SFTP_SERVER);
  });
}
