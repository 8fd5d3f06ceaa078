import { and, like, ne } from "drizzle-orm";
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
