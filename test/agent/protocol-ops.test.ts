import { describe, expect, it } from "vitest";
import { OpName, ops } from "../../shared/protocol";
import { lazy } from "../../shared/protocol/lazy";

/** Whether `ops[op]` has been read (its schemas built) or is still the getter that builds them. */
const built = (op: string) => "value" in (Object.getOwnPropertyDescriptor(ops, op) ?? {});

describe("the op table (shared/protocol/lazy.ts)", () => {
  it("lists every op without building any op's schemas", () => {
    // ControlCall's op check is made of the names at load; nothing else is built until it is read
    expect(OpName.options.length).toBeGreaterThan(40);
    expect(Object.keys(ops)).toEqual(OpName.options);
    expect(OpName.options.filter(built)).toEqual([]);
  });

  it("builds one op's schemas on its first read, only that op's, and keeps them", () => {
    const first = ops["backup.create"];
    expect(built("backup.create")).toBe(true);
    expect(built("backup.restore")).toBe(false);
    expect(ops["backup.create"]).toBe(first);
    expect(first.params.safeParse({ name: "web-1", backupId: "bk_12345678", preset: "php" }).success).toBe(
      true,
    );
    expect(first.params.safeParse({ name: "web-1", backupId: "nope", preset: "php" }).success).toBe(false);
  });

  it("every op builds a params and a result schema", () => {
    for (const op of OpName.options) {
      const { params, result } = ops[op];
      expect(typeof params.safeParse, op).toBe("function");
      expect(typeof result.safeParse, op).toBe("function");
    }
  });

  it("a lazy schema is built once, on its first call", () => {
    let builds = 0;
    const schema = lazy(() => ({ n: ++builds }));
    expect(builds).toBe(0);
    expect(schema()).toBe(schema());
    expect(builds).toBe(1);
  });
});
