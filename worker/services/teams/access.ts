import { and, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type TeamRow, teamMembers, teams } from "../../db/schema";

export interface TeamAccess {
  team: TeamRow;
  role: "owner" | "member";
}

/** The team if the user belongs to it. A team the caller is not in is "not found", never "forbidden". */
export async function requireMember(db: Db, teamId: string, userId: string): Promise<Result<TeamAccess>> {
  const [row] = await db
    .select({ team: teams, role: teamMembers.role })
    .from(teams)
    .innerJoin(teamMembers, and(eq(teamMembers.teamId, teams.id), eq(teamMembers.userId, userId)))
    .where(eq(teams.id, teamId))
    .limit(1);
  return row ? ok(row) : fail("not_found", "team not found");
}

/** Members who are not the owner get 403 for owner-only operations. */
export async function requireOwner(db: Db, teamId: string, userId: string): Promise<Result<TeamAccess>> {
  const access = await requireMember(db, teamId, userId);
  if (!access.ok) return access;
  if (access.value.role !== "owner") return fail("forbidden", "only the team owner can do this");
  return access;
}
