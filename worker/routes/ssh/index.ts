import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { sshAccess } from "../../services/ssh/access";
import { addPodKey, listPodKeys, removePodKey } from "../../services/ssh/keys";
import { PodParams } from "../pods/schemas";

const tags = ["SSH"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const SshAccess = z
  .object({
    user: z.string().openapi({ example: "pod_user" }),
    host: z.string(),
    port: z.number().int(),
    ssh_ready: z.literal(true),
    command: z.string().openapi({ example: "ssh -p 2201 pod_user@ssh.example.com" }),
  })
  .openapi("SshAccess");

const SshNotReady = z.object({ error: z.string(), ssh_ready: z.literal(false) }).openapi("SshNotReady");

const KeyLine = z.string().max(16_384);
const KeyBody = z.object({
  key: KeyLine.openapi({ description: 'one OpenSSH public key line, "<type> <base64> [comment]"' }),
});

/** Mounted at /api/pods beside the pods router: SSH access details and the pod's own authorized_keys. */
export const sshRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "getPodSshAccess",
      method: "get",
      path: "/{name}/ssh",
      summary: "How to SSH, SCP or SFTP into the pod",
      request: { params: PodParams },
      responses: {
        200: jsonResponse(SshAccess, "Connection details"),
        503: jsonResponse(SshNotReady, "The pod's SSH port is not allocated yet"),
        ...errors(401, 404),
      },
    }),
    async (c) =>
      c.json(
        unwrap(
          await sshAccess({
            ctx: serviceContext(c),
            teamId: c.get("caller").teamId,
            input: c.req.valid("param"),
          }),
        ),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listPodSshKeys",
      method: "get",
      path: "/{name}/ssh/keys",
      summary: "The lines of the pod's authorized_keys, as the pod has them now",
      request: { params: PodParams },
      responses: {
        200: jsonResponse(z.object({ keys: z.array(z.string()) }), "Keys; an empty array when none"),
        ...errors(401, 404, 409, 429, 503),
      },
    }),
    async (c) =>
      c.json(
        unwrap(
          await listPodKeys({
            ctx: serviceContext(c),
            teamId: c.get("caller").teamId,
            input: c.req.valid("param"),
          }),
        ),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "addPodSshKey",
      method: "post",
      path: "/{name}/ssh/keys",
      summary: "Add a key to the pod's authorized_keys; effective immediately",
      request: { params: PodParams, body: jsonBody(KeyBody) },
      responses: {
        201: jsonResponse(
          z.object({ message: z.literal("key added"), key: z.string(), fingerprint: z.string() }),
          "Added (the key as installed, normalized)",
        ),
        200: jsonResponse(
          z.object({ message: z.literal("key already exists") }),
          "The pod already has this key (whatever its comment)",
        ),
        ...errors(400, 401, 404, 409, 429, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const result = unwrap(
        await addPodKey({
          ctx: serviceContext(c),
          teamId: c.get("caller").teamId,
          input: { name, key: c.req.valid("json").key, addedBy: c.get("caller").user.id },
        }),
      );
      return result.added
        ? c.json({ message: "key added" as const, key: result.key, fingerprint: result.fingerprint }, 201)
        : c.json({ message: "key already exists" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "removePodSshKey",
      method: "delete",
      path: "/{name}/ssh/keys",
      summary: "Remove a key from the pod's authorized_keys (matched by type and key data, not comment)",
      request: { params: PodParams, body: jsonBody(KeyBody) },
      responses: {
        200: jsonResponse(StatusBody("deleted"), "Removed; effective immediately"),
        ...errors(400, 401, 404, 409, 429, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      unwrap(
        await removePodKey({
          ctx: serviceContext(c),
          teamId: c.get("caller").teamId,
          input: { name, key: c.req.valid("json").key },
        }),
      );
      return c.json({ status: "deleted" as const }, 200);
    },
  );
