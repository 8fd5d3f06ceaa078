import type { z } from "zod";

/**
 * Schemas built on first use. Every zod schema is an object graph (~1 KB of heap and a dozen
 * closures each, a few per field), and the op tables hold some 800 of them: built at load, they were
 * ~1 MB of the agent's heap before its first command, most for capabilities a host may not use for
 * hours (backups, deploys, coding agents). An op's schemas are built the first time its entry is
 * read; a named schema that several ops share is a `lazy` builder. The wire format does not change:
 * the schemas are the same, only built later (bench/README.md, "bench/agent, lazy schemas").
 */

/** One op's schemas: the agent parses `params`, the Worker parses `result`. */
export interface OpSchemas {
  params: z.ZodType;
  result: z.ZodType;
}

/** `build` run once, on the first call; its value kept. */
export function lazy<T>(build: () => T): () => T {
  let built: { value: T } | undefined;
  return () => {
    built ??= { value: build() };
    return built.value;
  };
}

/** The type a lazy schema parses to: `Built<typeof X>` for `const X = lazy(() => z.object(…))`. */
export type Built<F extends () => z.ZodType> = z.infer<ReturnType<F>>;

/**
 * The op table from entries that build their schemas: `table[op]` builds that op's on its first
 * read and keeps them (the getter replaces itself with the value). `Object.keys` builds nothing.
 */
export function opTable<G extends Record<string, () => OpSchemas>>(
  entries: G,
): { readonly [K in keyof G]: ReturnType<G[K]> } {
  const table = {};
  for (const [op, build] of Object.entries(entries)) {
    Object.defineProperty(table, op, {
      enumerable: true,
      configurable: true,
      get() {
        const value = build();
        Object.defineProperty(table, op, { value, enumerable: true });
        return value;
      },
    });
  }
  return table as { readonly [K in keyof G]: ReturnType<G[K]> };
}
