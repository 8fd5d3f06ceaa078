import { DEPLOY_LOG_MAX_BYTES } from "../../shared/protocol/messages";
import type { Redactor } from "./redact";

/** what the agent sends as one `agent:deploy-log` message */
export interface DeployLogMessage {
  type: "agent:deploy-log";
  deploymentId: string;
  seq: number;
  chunk: string;
}

/** chunk size and interval of `agent:deploy-log` (shared/protocol/messages.ts) */
const CHUNK_CHARS = 64 * 1024;
const INTERVAL_MS = 500;
/** a line longer than this is cut (output without newlines must not grow a buffer) */
const MAX_PENDING = 8 * 1024;

/**
 * One deployment's build log: redacted text in, `agent:deploy-log` messages out (seq from 0, at most
 * one chunk of ≤ 64 KiB every ~500 ms, the rest when the deploy ends) and the same text kept for
 * `~/logs/build.log`. Everything is bounded: past DEPLOY_LOG_MAX_BYTES one last line says the log
 * was truncated and the rest is dropped. Redaction sees whole lines; a line cut for length keeps
 * back as much as the longest secret form, so a token split across two writes is still caught.
 */
export class DeployLog {
  private pending = "";
  private outbox = "";
  private readonly kept: string[] = [];
  private keptBytes = 0;
  private seq = 0;
  private truncated = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly started = Date.now();

  constructor(
    readonly deploymentId: string,
    private readonly redactor: Redactor,
    /** false when the control socket is down: the chunk stays in the outbox for the next tick */
    private readonly send: ((m: DeployLogMessage) => boolean) | undefined,
    private readonly maxBytes = DEPLOY_LOG_MAX_BYTES,
  ) {
    if (send) {
      this.timer = setInterval(() => this.tick(), INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** a line of the agent's own (prefixed, so it stands out from the build's output) */
  note(line: string): void {
    this.write(`[podhost +${((Date.now() - this.started) / 1000).toFixed(2)}s] ${line}\n`);
  }

  write(text: string): void {
    if (this.truncated) return;
    this.pending = this.redactor.redact(this.pending + text);
    const nl = this.pending.lastIndexOf("\n");
    if (nl >= 0) {
      this.emit(this.pending.slice(0, nl + 1));
      this.pending = this.pending.slice(nl + 1);
    }
    if (this.pending.length > MAX_PENDING) {
      const keep = Math.max(0, this.redactor.longest - 1);
      this.emit(this.pending.slice(0, this.pending.length - keep));
      this.pending = this.pending.slice(this.pending.length - keep);
    }
  }

  private emit(text: string): void {
    if (this.truncated || text.length === 0) return;
    const bytes = Buffer.byteLength(text);
    if (this.keptBytes + bytes > this.maxBytes) {
      const room = this.maxBytes - this.keptBytes;
      const head = Buffer.from(text)
        .subarray(0, Math.max(0, room))
        .toString("utf8")
        .replace(/\uFFFD$/, "");
      const tail = `\n[podhost] the build log was truncated at ${this.maxBytes} bytes\n`;
      this.push(head + tail);
      this.truncated = true;
      return;
    }
    this.push(text);
  }

  private push(text: string): void {
    this.kept.push(text);
    this.keptBytes += Buffer.byteLength(text);
    if (this.send) this.outbox += text;
  }

  /**
   * Sends the outbox's next chunk; false when there was nothing to send or the socket was down. A
   * chunk not sent is kept (the outbox is bounded by the log's cap), so lines written while the
   * control socket reconnects reach a watcher of the deploy once it is back, in order.
   */
  private tick(): boolean {
    if (!this.send || this.outbox.length === 0) return false;
    const chunk = this.outbox.slice(0, CHUNK_CHARS);
    if (!this.send({ type: "agent:deploy-log", deploymentId: this.deploymentId, seq: this.seq, chunk }))
      return false;
    this.seq++;
    this.outbox = this.outbox.slice(chunk.length);
    return true;
  }

  /** Flush everything (in ≤ 64 KiB chunks) and stop the timer; the whole kept text. */
  close(): string {
    if (this.pending) {
      this.emit(this.pending.endsWith("\n") ? this.pending : `${this.pending}\n`);
      this.pending = "";
    }
    clearInterval(this.timer);
    // what the socket cannot take now is in the deploy's result (the kept text) all the same
    while (this.tick()) {}
    return this.kept.join("");
  }

  /** the kept text so far (for build.log) */
  text(): string {
    return this.kept.join("");
  }
}
