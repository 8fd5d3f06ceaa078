/**
 * A D1 binding that records its round trips: each call that reaches the database (a statement's
 * `all`/`raw`/`run`/`first`, one `batch`, one `exec`) is one entry, listing the SQL it carried. For
 * tests that hold a path to a number of round trips (a create's admission), not to a time.
 */
export function countingD1(db: D1Database): { d1: D1Database; roundTrips: string[][] } {
  const roundTrips: string[][] = [];
  // each counting statement's SQL and the binding's own statement (a batch wants those)
  const inner = new WeakMap<object, { sql: string; statement: D1PreparedStatement }>();
  type Fn = (...args: unknown[]) => unknown;

  const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const counting = new Proxy(statement, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        if (key === "bind")
          return (...args: unknown[]) => wrap((value as Fn).apply(target, args) as D1PreparedStatement, sql);
        if (key === "all" || key === "raw" || key === "run" || key === "first")
          return (...args: unknown[]) => {
            roundTrips.push([sql]);
            return (value as Fn).apply(target, args);
          };
        return (value as Fn).bind(target);
      },
    });
    inner.set(counting, { sql, statement });
    return counting;
  };

  const d1 = new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (key === "batch")
        return (statements: D1PreparedStatement[]) => {
          roundTrips.push(statements.map((s) => inner.get(s)?.sql ?? "?"));
          return target.batch(statements.map((s) => inner.get(s)?.statement ?? s));
        };
      if (key === "exec")
        return (sql: string) => {
          roundTrips.push([sql]);
          return target.exec(sql);
        };
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as Fn).bind(target) : value;
    },
  });
  return { d1, roundTrips };
}
