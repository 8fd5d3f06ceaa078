import { fail, type Result } from "../../../shared/errors";
import type { Op } from "../../../shared/protocol";
import type { WorkflowBinding } from "../../env";

/**
 * Where a dispatched command's outcome goes: an event of type `type` to the workflow instance
 * `instanceId` of the binding `workflow` (see worker/workflows/host-step.ts).
 */
export interface Notify {
  workflow: WorkflowBinding;
  instanceId: string;
  type: string;
}

export interface JournalEntry {
  id: string;
  outcome: Result<unknown> | undefined;
}

/** A dispatched command still waiting for its answer: what to send again after a reconnect. */
export interface PendingDispatch {
  id: string;
  idempotencyKey: string;
  op: Op;
  params: unknown;
  timeoutMs: number;
}

/** settled rows are kept this long; `sent` rows older than this belong to callers long gone */
export const JOURNAL_RETENTION_MS = 60 * 60_000;

/**
 * The largest outcome kept for a replay. An exec's result can be megabytes; keeping it would let a
 * tenant fill the object's storage, so a replay of such a command hears that it already ran.
 */
export const MAX_KEPT_OUTCOME_BYTES = 64 * 1024;

const TOO_LARGE_TO_KEEP = JSON.stringify(
  fail("conflict", "the command already ran; its result was too large to keep for a replay"),
);

/**
 * The HostAgent's command journal, in the object's own SQLite storage: every command that changes a
 * host, under its idempotency key, with its outcome once the agent answered. Dispatched commands
 * (a Workflow's) also keep their params, timeout and whom to tell, so they can be sent again after a
 * reconnect and their outcome delivered however long it takes. Why: ../../../docs/decisions/host-agent-journal.md.
 */
export class Journal {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS journal (
      id TEXT PRIMARY KEY,
      idempotency_key TEXT NOT NULL UNIQUE,
      op TEXT NOT NULL,
      state TEXT NOT NULL,            -- sent | done | failed
      outcome TEXT,                   -- JSON Result once settled
      created_at INTEGER NOT NULL
    )`);
    // Dispatched commands (journal v2): what to send again after a reconnect and whom to tell.
    const columns = sql.exec<{ name: string }>("PRAGMA table_info(journal)").toArray();
    if (!columns.some((c) => c.name === "notify")) {
      sql.exec("ALTER TABLE journal ADD COLUMN params TEXT");
      sql.exec("ALTER TABLE journal ADD COLUMN timeout_ms INTEGER");
      sql.exec("ALTER TABLE journal ADD COLUMN notify TEXT");
    }
  }

  byKey(idempotencyKey: string): JournalEntry | undefined {
    const row = this.sql
      .exec<{ id: string; outcome: string | null }>(
        "SELECT id, outcome FROM journal WHERE idempotency_key = ?",
        idempotencyKey,
      )
      .toArray()[0];
    return (
      row && { id: row.id, outcome: row.outcome ? (JSON.parse(row.outcome) as Result<unknown>) : undefined }
    );
  }

  opOf(id: string): Op | undefined {
    return this.sql.exec<{ op: Op }>("SELECT op FROM journal WHERE id = ?", id).toArray()[0]?.op;
  }

  /** A command a caller waits on. */
  recordCall(id: string, idempotencyKey: string, op: Op): void {
    this.sql.exec(
      "INSERT INTO journal (id, idempotency_key, op, state, created_at) VALUES (?, ?, ?, 'sent', ?)",
      id,
      idempotencyKey,
      op,
      Date.now(),
    );
  }

  /** A dispatched command, new or sent again (then its params and whom to tell are the latest). */
  recordDispatch(d: PendingDispatch & { notify: Notify; existing: boolean }): void {
    if (d.existing) {
      this.sql.exec(
        "UPDATE journal SET notify = ?, params = ?, timeout_ms = ? WHERE id = ?",
        JSON.stringify(d.notify),
        JSON.stringify(d.params),
        d.timeoutMs,
        d.id,
      );
      return;
    }
    this.sql.exec(
      `INSERT INTO journal (id, idempotency_key, op, state, created_at, params, timeout_ms, notify)
       VALUES (?, ?, ?, 'sent', ?, ?, ?, ?)`,
      d.id,
      d.idempotencyKey,
      d.op,
      Date.now(),
      JSON.stringify(d.params),
      d.timeoutMs,
      JSON.stringify(d.notify),
    );
  }

  /**
   * Records the outcome once: a later copy of the answer changes nothing. Returns whether this call
   * recorded it, and whom to tell when the command was dispatched.
   */
  settle(id: string, outcome: Result<unknown>): { settled: boolean; notify?: Notify } {
    const row = this.sql
      .exec<{ notify: string | null }>(
        // Params are only needed to send a command again: once it is settled they go (a deploy's
        // carry the user's git token, which must not rest here longer than the command runs).
        "UPDATE journal SET state = ?, outcome = ?, params = NULL WHERE id = ? AND state = 'sent' RETURNING notify",
        outcome.ok ? "done" : "failed",
        keptOutcome(outcome),
        id,
      )
      .toArray()[0];
    if (!row) return { settled: false };
    return row.notify ? { settled: true, notify: JSON.parse(row.notify) as Notify } : { settled: true };
  }

  /** Dispatched commands without an outcome, oldest first. */
  pendingDispatches(): PendingDispatch[] {
    return this.sql
      .exec<{ id: string; idempotency_key: string; op: Op; params: string; timeout_ms: number }>(
        `SELECT id, idempotency_key, op, params, timeout_ms FROM journal
         WHERE state = 'sent' AND notify IS NOT NULL ORDER BY created_at`,
      )
      .toArray()
      .map((r) => ({
        id: r.id,
        idempotencyKey: r.idempotency_key,
        op: r.op,
        params: JSON.parse(r.params) as unknown,
        timeoutMs: r.timeout_ms,
      }));
  }

  /**
   * Settled rows past retention go; `sent` rows that old are failed (their callers are long gone),
   * each naming its op and `whose` agent never answered it ("server fra-1's").
   */
  prune(whose: string, now = Date.now()): void {
    const cutoff = now - JOURNAL_RETENTION_MS;
    this.sql.exec("DELETE FROM journal WHERE state != 'sent' AND created_at < ?", cutoff);
    const stale = this.sql
      .exec<{ id: string; op: Op }>(
        "SELECT id, op FROM journal WHERE state = 'sent' AND created_at < ?",
        cutoff,
      )
      .toArray();
    for (const { id, op } of stale) {
      const never = fail("unavailable", `${whose} agent never answered ${op} (host)`);
      this.sql.exec(
        "UPDATE journal SET state = 'failed', outcome = ?, params = NULL WHERE id = ?",
        JSON.stringify({ ...never, component: "host" }),
        id,
      );
    }
  }
}

/** What the journal keeps of an outcome: itself while small, else that it ran (the caller got it whole). */
function keptOutcome(outcome: Result<unknown>): string {
  const text = JSON.stringify(outcome);
  // UTF-16 length first: most outcomes are small, and only the large ones pay for the encoding.
  if (text.length * 3 <= MAX_KEPT_OUTCOME_BYTES) return text;
  return new TextEncoder().encode(text).byteLength <= MAX_KEPT_OUTCOME_BYTES ? text : TOO_LARGE_TO_KEEP;
}
