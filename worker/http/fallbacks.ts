import type { Context } from "hono";
import type { AppEnv } from "./app-env";

interface KnownRoute {
  method: string;
  pattern: RegExp;
}

/**
 * `/api/teams/:id/members` → a regex matching any concrete path of that shape. Exactly that shape:
 * routing is strict, so `/api/teams/` is not `/api/teams` and must not be told "405, use GET".
 */
const toPattern = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+")}$`);

/**
 * 404 for paths nobody serves, 405 (with Allow) for a known path asked with another method.
 * Hono itself only knows "no match", so the route table is read once, lazily.
 */
export function createFallbackHandler(listRoutes: () => { method: string; path: string }[]) {
  let known: KnownRoute[] | undefined;
  return (c: Context<AppEnv>) => {
    known ??= listRoutes()
      .filter((r) => r.method !== "ALL")
      .map((r) => ({ method: r.method, pattern: toPattern(r.path) }));
    const allowed = [...new Set(known.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method))];
    if (allowed.length > 0) {
      return c.json(
        { error: `method ${c.req.method} not allowed on ${c.req.path}; use ${allowed.join(", ")}` },
        405,
        {
          Allow: allowed.join(", "),
        },
      );
    }
    return c.json({ error: `not found: ${c.req.method} ${c.req.path}` }, 404);
  };
}
