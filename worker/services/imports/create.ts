import { type Zippable, zipSync } from "fflate";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Caller } from "../auth/caller";
import { discardStagedBlob, incomingStagingKey } from "../blobs/staging";
import type { ServiceContext } from "../context";
import { resolvePlan, resolveRegion } from "../pods/admission";
import { createPod } from "../pods/create";
import { claimableName } from "../pods/names";
import type { PodView } from "../pods/view";
import { type Artifact, type ArtifactView, viewArtifact } from "./artifact";
import { type PasteInput, pasteArtifact } from "./paste";
import { type UrlImportOptions, urlArtifact } from "./url";

export interface ImportInput extends UrlImportOptions {
  url?: string;
  paste?: PasteInput;
  name?: string;
  region?: string;
  server_id?: string;
  plan_slug: string;
  ssh_key?: string;
  dry_run?: boolean;
}

export type ImportOutcome =
  | { dryRun: true; artifact: ArtifactView }
  | { dryRun: false; artifact: ArtifactView; pod: PodView; message: string };

/**
 * `POST /api/imports`: a URL (fetched here, within the spec's budget) or a paste becomes an artifact;
 * `dry_run` answers with it. Otherwise the artifact's files, zipped and staged in R2, seed a new pod
 * admitted like any other (name rules, 402, 409, 503): the pod-create workflow starts it, unpacks the
 * files into ~/app once it runs and reloads it on them (a `package.json` project is installed and
 * built there), then records an `imported` event.
 */
export async function createImport({
  ctx,
  caller,
  input,
  country,
}: {
  ctx: ServiceContext;
  caller: Caller;
  input: ImportInput;
  country?: string;
}): Promise<Result<ImportOutcome>> {
  const hasUrl = input.url !== undefined;
  const hasPaste = input.paste !== undefined;
  if (hasUrl === hasPaste)
    return fail("bad_request", hasUrl ? "send url or paste, not both" : "send one of url or paste");
  if (input.paste?.body !== undefined && input.paste.files !== undefined)
    return fail("bad_request", "paste: send body or files, not both");
  // What can be refused cheaply is refused before a fetch of up to 75 s: the plan, the region, a taken name.
  if (!input.dry_run) {
    const plan = resolvePlan(input.plan_slug);
    if (!plan.ok) return plan;
    const region = resolveRegion(input.region, country);
    if (!region.ok) return region;
    if (input.name !== undefined) {
      const claim = await claimableName(ctx.db, input.name);
      if (!claim.ok) return claim;
    }
  }
  const artifact =
    input.url !== undefined
      ? await urlArtifact(ctx, input.url, input)
      : await pasteArtifact(input.paste ?? {});
  if (!artifact.ok) return artifact;
  const a = artifact.value;
  if (input.dry_run) return ok({ dryRun: true, artifact: viewArtifact(a, true) });

  const explicit = input.name !== undefined;
  let name = input.name ?? (await derivedName(ctx, a.slug));
  const incomingKey = incomingStagingKey();
  const { bytes, files } = await stageArtifact(ctx, a, incomingKey);
  for (let attempt = 0; ; attempt++) {
    const created = await createPod({
      ctx,
      caller,
      input: {
        name,
        preset: a.preset,
        plan_slug: input.plan_slug,
        region: input.region,
        server_id: input.server_id,
        ssh_key: input.ssh_key,
        description: `${a.title} (imported from ${a.source_url || a.source})`.slice(0, 500),
      },
      country,
      seed: {
        kind: "zip",
        incomingKey,
        filename: `${a.slug}.zip`,
        files,
        bytes,
        imported: { source: a.source, source_url: a.source_url, type: a.type, title: a.title },
      },
    });
    if (created.ok)
      return ok({
        dryRun: false,
        artifact: viewArtifact(a, false),
        pod: created.value,
        message: `importing "${a.title}" into pod ${name}: its files are pushed once the pod is running (GET /api/pods/${name}/events shows progress)`,
      });
    // A derived name taken a moment ago gets another suffix; an explicit one is the caller's 409.
    if (created.code === "conflict" && !explicit && attempt < 3) {
      name = withSuffix(a.slug);
      continue;
    }
    await discardStagedBlob(ctx.env, incomingKey);
    return created;
  }
}

const randomTail = () =>
  [...crypto.getRandomValues(new Uint8Array(6))].map((b) => (b % 36).toString(36)).join("");

const withSuffix = (slug: string) => `${slug.slice(0, 33).replace(/-+$/, "")}-${randomTail()}`;

/** The title's slug when no pod has it, else the slug with a random suffix. */
async function derivedName(ctx: ServiceContext, slug: string): Promise<string> {
  return (await claimableName(ctx.db, slug)).ok ? slug : withSuffix(slug);
}

/**
 * The artifact's files as one ZIP archive under a staging key no host owns yet (from-zip's path from
 * here on). Runtimes under vendor/ are stored, not deflated: they are large and already minified, so
 * deflating them would cost the request CPU time for little.
 */
async function stageArtifact(
  ctx: ServiceContext,
  a: Artifact,
  key: string,
): Promise<{ bytes: number; files: number }> {
  const entries: Zippable = {};
  let bytes = 0;
  for (const f of a.files) {
    entries[f.path] = [f.bytes, { level: f.path.startsWith("vendor/") ? 0 : 6 }];
    bytes += f.bytes.byteLength;
  }
  await ctx.env.BLOBS.put(key, zipSync(entries));
  return { bytes, files: a.files.length };
}
