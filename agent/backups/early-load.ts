import { Transform, type TransformCallback } from "node:stream";
import type { DumpEntry } from "../../shared/protocol/backups";
import type { Logger } from "../logger";
import { loadService, type ServiceKind, type ServiceSidecar } from "./services";
import type { Workspace } from "./workspace";

/**
 * A restore's service dumps, loaded while the rest of the archive is still unpacking.
 *
 * The archive holds its manifest, then `databases/…`, then `app/…` (./create.ts), and the pod's tar
 * unpacks it in that order: once it names the first `app/` member, every dump is whole in the
 * staging dir. Loading one then, beside the unpacking of the app's files, makes a restore take
 * about the longer of the two rather than their sum.
 *
 * But nothing may change before the archive's bytes are known to be the recorded ones, and the app
 * must be swapped before its database is. `svc-load` replaces the pod's data only after the end of
 * a complete dump (for PostgreSQL the dump streams into a side database; the others store it
 * first), so each dump goes in without its last HOLD_BYTES, which hold the dump tool's completion
 * footer: the load runs up to there and waits. `finish()` (archive checked, app swapped) sends the
 * rest and the data is replaced; `abandon()` stops the load instead, and `svc-load`, killed before
 * it read an end, replaces nothing (a side database left behind is dropped by the next load).
 */

/** more than any dump tool's footer, and than `svc-load`'s look at the end of a dump (300 bytes) */
export const HOLD_BYTES = 64 * 1024;

/** Passes a stream on but for its last `keep` bytes, which follow only on `release()`. */
export class HoldBack extends Transform {
  private held = Buffer.alloc(0);
  private released = false;
  private ending: TransformCallback | null = null;

  constructor(private readonly keep: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const all = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const cut = all.length - this.keep;
    if (cut > 0) {
      this.push(all.subarray(0, cut));
      this.held = Buffer.from(all.subarray(cut));
    } else this.held = Buffer.from(all);
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.released) this.end_(done);
    else this.ending = done;
  }

  release(): void {
    this.released = true;
    const done = this.ending;
    this.ending = null;
    if (done) this.end_(done);
  }

  private end_(done: TransformCallback) {
    if (this.held.length > 0) this.push(this.held);
    this.held = Buffer.alloc(0);
    done();
  }
}

interface Started {
  gate: HoldBack;
  stop: AbortController;
  sidecar: ServiceSidecar;
  /** the load's failure line, or null; settles once it ran out or was stopped */
  result: Promise<string | null>;
}

export class EarlyLoads {
  private readonly started = new Map<string, Started>();
  private closed = false;

  constructor(
    private readonly deps: Parameters<typeof loadService>[0] & { log: Logger },
    private readonly ws: Workspace,
    private readonly staging: string,
    private readonly signal: AbortSignal,
  ) {}

  /**
   * Start loading each managed service's dump the manifest names (SQLite copies wait for the swap,
   * self-run servers for the app's services to be back).
   */
  async start(databases: DumpEntry[]): Promise<void> {
    for (const db of databases) {
      if (this.closed || db.kind === "sqlite" || db.port !== undefined || this.started.has(db.file)) continue;
      const kind: ServiceKind = db.kind;
      if (!this.ws.services.includes(kind)) continue;
      const server = await this.ws.serverOf(kind);
      if (!server.ok || this.closed) continue;
      this.deps.log.info("backup restore: loading a dump while the app's files unpack", {
        kind,
        file: db.file,
      });
      const gate = new HoldBack(HOLD_BYTES);
      // stopped by its signal, which reaches both processes also before they exist
      const stop = new AbortController();
      const result = loadService(
        this.deps,
        this.ws.container,
        server.sidecar,
        `${this.staging}/x/${db.file}`,
        AbortSignal.any([this.signal, stop.signal]),
        gate,
      )
        .catch((err: unknown) => String(err))
        .finally(() => server.release());
      this.started.set(db.file, { gate, stop, sidecar: server.sidecar, result });
    }
  }

  /**
   * The dump's load brought to its end: true when it replaced the data, false when there was no
   * early load or it had failed (the caller loads it the usual way, which reports why).
   */
  async finish(file: string): Promise<boolean> {
    const load = this.started.get(file);
    if (!load) return false;
    this.started.delete(file);
    load.gate.release();
    return (await load.result) === null;
  }

  /**
   * Every load not finished is stopped before it replaced anything; settles once they ended. What a
   * stopped load left in its sidecar (PostgreSQL's side database, the others' stored dump) goes
   * with an empty load, which `svc-load` refuses after clearing its own leftovers.
   */
  async abandon(): Promise<void> {
    this.closed = true;
    const left = [...this.started.values()];
    this.started.clear();
    for (const load of left) load.stop.abort(new Error("the restore did not get to this database"));
    await Promise.all(
      left.map(async (l) => {
        await l.result;
        await loadService(this.deps, this.ws.container, l.sidecar, "/dev/null", this.signal).catch(
          () => null,
        );
      }),
    );
  }
}
