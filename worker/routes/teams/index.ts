import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { accountWide, boundTeamOnly, requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { createInvitation, deleteInvitation, listInvitations } from "../../services/invitations/invitations";
import { addMember, listMembers, removeMember, toMemberView } from "../../services/teams/members";
import {
  createTeam,
  deleteTeam,
  getTeam,
  listTeams,
  renameTeam,
  switchTeam,
} from "../../services/teams/teams";
import { Email, User } from "../auth/schemas";
import { Invitation, InviteRole, Member, MemberDetails, Team, TeamIdParam, TeamName } from "./schemas";

const tags = ["Teams"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };
/** Routes on one team (`{id}`): a credential bound to another team gets 404 (boundTeamOnly). */
const onTeam = { ...common, middleware: [jsonBodyLimit, requireAuth, boundTeamOnly] };
const MemberParams = TeamIdParam.extend({ uid: z.string().max(64) });
const InvitationParams = TeamIdParam.extend({ invId: z.string().max(64) });
const MembershipRequest = z.object({ email: Email, role: InviteRole });

export const teamsRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "listTeams",
      method: "get",
      path: "/",
      summary: "The caller's teams",
      responses: { 200: jsonResponse(z.array(Team), "Teams"), ...errors(401) },
    }),
    async (c) => c.json(await listTeams(serviceContext(c), c.get("caller").user.id), 200),
  )
  .openapi(
    createRoute({
      ...common,
      middleware: [jsonBodyLimit, requireAuth, accountWide("creating a team")],
      operationId: "createTeam",
      method: "post",
      path: "/",
      summary: "Create a team; the caller becomes its owner (403 to an API token or connector session)",
      request: { body: jsonBody(z.object({ name: TeamName })) },
      responses: { 201: jsonResponse(Team, "Created"), ...errors(400, 401, 403) },
    }),
    async (c) =>
      c.json(await createTeam(serviceContext(c), c.get("caller").user.id, c.req.valid("json").name), 201),
  )
  .openapi(
    createRoute({
      ...common,
      middleware: [jsonBodyLimit, requireAuth, accountWide("switching the active team")],
      operationId: "switchTeam",
      method: "post",
      path: "/switch",
      summary: "Make a team the active one (403 to an API token or connector session)",
      request: { body: jsonBody(z.object({ team_id: z.string().max(64) })) },
      responses: { 200: jsonResponse(User, "The updated user"), ...errors(400, 401, 403, 404) },
    }),
    async (c) =>
      c.json(
        unwrap(await switchTeam(serviceContext(c), c.get("caller").user.id, c.req.valid("json").team_id)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "getTeam",
      method: "get",
      path: "/{id}",
      summary: "One team (404 when the caller is not a member)",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(Team, "The team"), ...errors(401, 404) },
    }),
    async (c) =>
      c.json(unwrap(await getTeam(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id)), 200),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "renameTeam",
      method: "put",
      path: "/{id}",
      summary: "Rename a team (owner only); the slug is derived again",
      request: { params: TeamIdParam, body: jsonBody(z.object({ name: TeamName })) },
      responses: { 200: jsonResponse(Team, "The renamed team"), ...errors(400, 401, 403, 404) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(
        unwrap(await renameTeam(serviceContext(c), c.get("caller").user.id, id, c.req.valid("json").name)),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "deleteTeam",
      method: "delete",
      path: "/{id}",
      summary: "Delete a team (owner only; 409 while it owns pods; personal teams stay)",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 403, 404, 409) },
    }),
    async (c) => {
      unwrap(await deleteTeam(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id));
      return c.json({ status: "deleted" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listTeamMembers",
      method: "get",
      path: "/{id}/members",
      summary: "Members of a team",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(z.array(Member), "Members"), ...errors(401, 404) },
    }),
    async (c) => {
      const rows = unwrap(
        await listMembers(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id),
      );
      return c.json(
        rows.map((r) => toMemberView(r.member)),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listTeamMemberDetails",
      method: "get",
      path: "/{id}/members/details",
      summary: "Members of a team with name and email",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(z.array(MemberDetails), "Members"), ...errors(401, 404) },
    }),
    async (c) => {
      const rows = unwrap(
        await listMembers(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id),
      );
      return c.json(
        rows.map((r) => ({ ...toMemberView(r.member), name: r.name, email: r.email })),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "addTeamMember",
      method: "post",
      path: "/{id}/members",
      summary: "Add an existing account to the team (owner only)",
      request: { params: TeamIdParam, body: jsonBody(MembershipRequest) },
      responses: { 201: jsonResponse(Member, "Membership"), ...errors(400, 401, 403, 404, 409) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(
        unwrap(await addMember(serviceContext(c), c.get("caller").user.id, id, c.req.valid("json"))),
        201,
      );
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "removeTeamMember",
      method: "delete",
      path: "/{id}/members/{uid}",
      summary: "Remove a member: the owner removes anyone but themselves, anyone removes themselves",
      request: { params: MemberParams },
      responses: { 200: jsonResponse(StatusBody("removed"), "Removed"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const { id, uid } = c.req.valid("param");
      unwrap(await removeMember(serviceContext(c), c.get("caller").user.id, id, uid));
      return c.json({ status: "removed" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "listTeamInvitations",
      method: "get",
      path: "/{id}/invitations",
      summary: "Pending invitations (owner only)",
      request: { params: TeamIdParam },
      responses: { 200: jsonResponse(z.array(Invitation), "Invitations"), ...errors(401, 403, 404) },
    }),
    async (c) =>
      c.json(
        unwrap(await listInvitations(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "createTeamInvitation",
      method: "post",
      path: "/{id}/invitations",
      summary: "Invite someone by email (owner only; valid 7 days)",
      request: { params: TeamIdParam, body: jsonBody(MembershipRequest) },
      responses: {
        201: jsonResponse(Invitation, "Invitation with its token"),
        ...errors(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { user } = c.get("caller");
      const { id } = c.req.valid("param");
      return c.json(unwrap(await createInvitation(serviceContext(c), user, id, c.req.valid("json"))), 201);
    },
  )
  .openapi(
    createRoute({
      ...onTeam,
      operationId: "deleteTeamInvitation",
      method: "delete",
      path: "/{id}/invitations/{invId}",
      summary: "Withdraw an invitation (owner only)",
      request: { params: InvitationParams },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const { id, invId } = c.req.valid("param");
      unwrap(await deleteInvitation(serviceContext(c), c.get("caller").user.id, id, invId));
      return c.json({ status: "deleted" as const }, 200);
    },
  );
