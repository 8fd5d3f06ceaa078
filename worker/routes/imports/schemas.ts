import { z } from "@hono/zod-openapi";
import { ARTIFACT_TYPES } from "../../services/imports/artifact";

export const tags = ["Imports"];

const TransferItem = z.object({ label: z.string(), detail: z.string() });

export const Transfer = z
  .object({
    headline: z.string(),
    transfers: z.array(TransferItem),
    does_not_transfer: z.array(TransferItem),
    notes: z.array(z.string()),
  })
  .openapi("ImportTransfer");

export const ArtifactFile = z.object({
  path: z.string(),
  size: z.number().int().openapi({ description: "exact size in bytes of what the pod receives" }),
  content: z.string().optional().openapi({ description: "dry_run only: the file's text" }),
  content_omitted: z.literal(true).optional().openapi({
    description:
      "dry_run only: content left out (binary, over 64 KB, past the 128 KB budget, or not a snapshot's index.html)",
  }),
  omitted_reason: z.string().optional(),
});

export const Artifact = z
  .object({
    source: z
      .string()
      .openapi({ description: "`site`, `paste`, or an AI assistant's name (`claude`, `chatgpt`, …)" }),
    source_url: z.string(),
    title: z.string(),
    slug: z.string(),
    type: z.enum(ARTIFACT_TYPES),
    preset: z.string(),
    files: z.array(ArtifactFile),
    transfer: Transfer,
  })
  .openapi("ImportArtifact");

export const Guide = z
  .object({
    slug: z.string(),
    name: z.string(),
    summary: z.string(),
    route: z.string(),
    automatic: z.literal(false),
    steps: z.array(z.object({ text: z.string() })),
    transfer: Transfer,
    docs: z.array(z.object({ text: z.string(), href: z.string() })),
  })
  .openapi("ImportGuide");
