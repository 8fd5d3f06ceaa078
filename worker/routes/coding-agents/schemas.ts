import { z } from "@hono/zod-openapi";
import { CODING_AGENT_SLUGS } from "../../../shared/coding-agents";
import { AgentVersion } from "../../../shared/protocol/coding-agents";
import { CODING_AGENT_STATUSES } from "../../db/schema";

/** Schemas the coding agent routes share (docs/coding-agents.md). */

export const AgentSlug = z
  .enum(CODING_AGENT_SLUGS)
  .openapi({ description: "a slug of GET /api/agents", example: "codex" });

export const AgentVersionField = AgentVersion()
  // a copy made now: zod 4 gives `.openapi()` only to schemas built after @hono/zod-openapi loaded,
  // and the shared schema may have been built before it (by whatever asked for it first)
  .clone()
  .openapi({
    description: "an exact version (1.2.3) or a dist-tag of the agent's npm package; default `latest`",
    example: "latest",
  });

export const AgentParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  slug: AgentSlug.openapi({ param: { name: "slug", in: "path" }, example: "codex" }),
});

export const CatalogAgent = z
  .object({
    slug: z.string().openapi({ example: "codex" }),
    name: z.string().openapi({ example: "Codex CLI" }),
    description: z.string(),
    package: z.string().openapi({ description: "the npm package", example: "@openai/codex" }),
    command: z.string().openapi({ description: "the command it installs", example: "codex" }),
    min_node: z.number().int().openapi({ description: "the lowest Node major it runs on", example: 16 }),
  })
  .openapi("CodingAgentCatalogEntry");

export const InstalledAgent = z
  .object({
    slug: z.string(),
    status: z.enum(CODING_AGENT_STATUSES),
    error_msg: z.string().optional().openapi({ description: "why the install failed (status error)" }),
    installed_at: z
      .string()
      .openapi({ description: "when the install finished (while installing: when it was asked for)" }),
    version: z.string().openapi({ description: "the installed version; empty until installed" }),
    command: z.string().openapi({ description: "run it in the pod (SSH, or the command runner)" }),
    node_major: z.number().int().nullable().openapi({ description: "the Node major it runs on" }),
    node_pinned: z.boolean().openapi({
      description:
        "true: the command runs on that Node beside the pod's own runtime (a non-Node.js pod, or an older Node)",
    }),
  })
  .openapi("CodingAgent");

export const tags = ["Coding agents"];
