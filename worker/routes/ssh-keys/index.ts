import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { addSshKey, deleteSshKey, listSshKeys, updateSshKey } from "../../services/ssh-keys/ssh-keys";
import { CreateSshKeyRequest, SshKey, SshKeyParams, UpdateSshKeyRequest } from "./schemas";

const tags = ["SSH keys"];
/**
 * Account keys reach every team (`auto_inject` puts one into each pod the user creates afterwards,
 * in any team): a team-bound credential gets 403 on all of them (accountWide).
 */
const common = {
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, accountWide("the account's SSH keys")],
};

/** The caller's account keys (per user, whichever team is active). */
export const sshKeysRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "listSshKeys",
      method: "get",
      path: "/",
      summary: "The caller's account SSH keys, newest first",
      responses: { 200: jsonResponse(z.array(SshKey), "Keys"), ...errors(401, 403) },
    }),
    async (c) => c.json(await listSshKeys(serviceContext(c), c.get("caller").user.id), 200),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "createSshKey",
      method: "post",
      path: "/",
      summary: "Add an account SSH key; with auto_inject it is installed into pods created afterwards",
      request: { body: jsonBody(CreateSshKeyRequest) },
      responses: {
        201: jsonResponse(SshKey, "The stored key"),
        ...errors(400, 401, 403, 409),
      },
    }),
    async (c) =>
      c.json(unwrap(await addSshKey(serviceContext(c), c.get("caller").user.id, c.req.valid("json"))), 201),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "updateSshKey",
      method: "put",
      path: "/{id}",
      summary:
        "Rename a key or change auto_inject (existing pods are not touched); key material cannot be edited",
      request: { params: SshKeyParams, body: jsonBody(UpdateSshKeyRequest) },
      responses: { 200: jsonResponse(SshKey, "The updated key"), ...errors(400, 401, 403, 404) },
    }),
    async (c) => {
      const { name, auto_inject } = c.req.valid("json");
      const key = await updateSshKey(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id, {
        name,
        auto_inject,
      });
      return c.json(unwrap(key), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "deleteSshKey",
      method: "delete",
      path: "/{id}",
      summary: "Delete an account key (pods it was installed into keep it)",
      request: { params: SshKeyParams },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      unwrap(await deleteSshKey(serviceContext(c), c.get("caller").user.id, c.req.valid("param").id));
      return c.json({ status: "deleted" as const }, 200);
    },
  );
