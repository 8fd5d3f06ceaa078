import { and, like, ne } from "drizzle-orm";
import { randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { teams } from "../../db/schema";

export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return slug || "team";
}

/** The slug of `name`, or the first free `slug-2`, `slug-3` … (ignoring the team being renamed). */
export async function uniqueSlug(db: Db, name: string, exceptTeamId?: string): Promise<string> {
  const base = slugify(name);
  const taken = await db
    .select({ slug: teams.slug })
    .from(teams)
    .where(and(like(teams.slug, `${base}%`), exceptTeamId ? ne(teams.id, exceptTeamId) : undefined));
  const used = new Set(taken.map((t) => t.slug));
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** Whether a D1 error (or one drizzle wrapped around it) is a UNIQUE violation on `table.column`. */
export function isUniqueViolation(error: unknown, column: string): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e.message.includes("UNIQUE constraint failed") && e.message.includes(column)) return true;
  }
  return false;
}

const SLUG_ATTEMPTS = 4;

/**
 * Runs `write` with the first free slug for `name`. Concurrent requests can all find the same slug
 * free (D1 has no interactive transactions); the unique index lets one write win. The others retry
 * with a random suffix, so any number of them settle in one more round instead of one each.
 */
export async function withUniqueSlug<T>(
  db: Db,
  name: string,
  write: (slug: string) => Promise<T>,
  exceptTeamId?: string,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const slug =
      attempt === 1 ? await uniqueSlug(db, name, exceptTeamId) : `${slugify(name)}-${randomToken(6)}`;
    try {
      return await write(slug);
    } catch (error) {
      if (attempt >= SLUG_ATTEMPTS || !isUniqueViolation(error, "teams.slug")) throw error;
    }
  }
}
