/**
 * The HostAgent's timers, in the object's own SQLite storage: what must happen later if nothing
 * changes meanwhile (a diagnosis still there after ALERT_UNHEALTHY_AFTER_S, an agent still gone after
 * ALERT_HOST_LOST_AFTER_S). One object alarm serves them and the journal's cleanup: the alarm is set
 * to the earliest due time, and the alarm handler runs what is due and sets it again for the next.
 * A timer is set under a key (`unhealthy:<pod id>`, `host-lost`): setting it again keeps the first
 * due time (the incident began then), clearing it cancels it.
 */
export class Timers {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS timers (key TEXT PRIMARY KEY, due_at INTEGER NOT NULL)");
  }

  /** Sets `key` for `dueAt` unless it is set already. */
  start(key: string, dueAt: number): void {
    this.sql.exec("INSERT INTO timers (key, due_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, dueAt);
  }

  clear(key: string): void {
    this.sql.exec("DELETE FROM timers WHERE key = ?", key);
  }

  /** Takes out and answers the keys due by `now`. */
  takeDue(now: number): string[] {
    const due = this.sql
      .exec<{ key: string }>("SELECT key FROM timers WHERE due_at <= ? ORDER BY due_at", now)
      .toArray()
      .map((r) => r.key);
    if (due.length > 0) this.sql.exec("DELETE FROM timers WHERE due_at <= ?", now);
    return due;
  }

  next(): number | null {
    return (
      this.sql.exec<{ at: number | null }>("SELECT min(due_at) AS at FROM timers").toArray()[0]?.at ?? null
    );
  }
}
