import { z } from "@hono/zod-openapi";

export const Team = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    owner_id: z.string(),
    account_type: z.enum(["personal", "team"]),
    trust_tier: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    role: z.enum(["owner", "member"]).openapi({ description: "the caller's role on this team" }),
  })
  .openapi("Team");

export const Member = z
  .object({
    id: z.string(),
    team_id: z.string(),
    user_id: z.string(),
    role: z.enum(["owner", "member"]),
    joined_at: z.string(),
  })
  .openapi("Member");

export const MemberDetails = Member.extend({ name: z.string(), email: z.string() }).openapi("MemberDetails");

export const Invitation = z
  .object({
    id: z.string(),
    team_id: z.string(),
    email: z.string(),
    role: z.enum(["owner", "member"]),
    token: z.string().nullable().openapi({
      description:
        "the invitation link's token (GET /api/invitations/{token}); null in the list for an invitation made before tokens were kept (invite the address again for a new link)",
    }),
    invited_by: z.string(),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .openapi("Invitation");

export const TeamName = z.string().trim().min(1).max(100);
/** One owner per team (the creator); people join as members. */
export const InviteRole = z.enum(["member"]).default("member");

export const TeamIdParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
});
