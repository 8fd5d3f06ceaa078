import type { PresetSlug } from "../../../shared/catalog";
import { fail, type Result } from "../../../shared/errors";
import type { Caller } from "../auth/caller";
import { discardStagedBlob } from "../blobs/staging";
import type { ServiceContext } from "../context";
import { createPod } from "../pods/create";
import { podNameFrom } from "../pods/names";
import type { PodView } from "../pods/view";
import { readZipUpload, runtimeMismatch } from "./archive";
import type { StagedZip } from "./form";

export interface FromZipInput {
  /** the archive, staged under a key no host owns yet (incomingStagingKey) */
  zip: StagedZip;
  name?: string;
  preset?: PresetSlug;
  plan_slug: string;
  region?: string;
  server_id?: string;
}

/** "My Site.zip" → "my-site-k3x9qa": the file's name when it makes one, always with a random tail. */
export const nameFromFile = (filename: string): string => podNameFrom(filename.replace(/\.zip$/i, ""));

/**
 * `POST /api/pods/from-zip`: the archive is checked before anything is created, the pod is admitted
 * like any other (202, `creating`), and the pod-create workflow hands the staged archive to the host,
 * which unpacks it into ~/app right after the first start and reloads the pod on it (dependencies
 * installed, services restarted) before the pod counts as running. Then the blob goes, and the
 * `zip_uploaded` and `reloaded` events are written (or an `error` event saying what failed).
 */
export async function createPodFromZip({
  ctx,
  caller,
  input,
  country,
}: {
  ctx: ServiceContext;
  caller: Caller;
  input: FromZipInput;
  country?: string;
}): Promise<Result<PodView>> {
  const incoming = input.zip.key;
  const refuse = async (r: Result<never>) => {
    await discardStagedBlob(ctx.env, incoming);
    return r;
  };
  const upload = await readZipUpload(ctx.env, input.zip);
  if (!upload.ok) return refuse(upload);
  const preset = input.preset ?? upload.value.detected;
  const mismatch = runtimeMismatch(preset, upload.value);
  if (mismatch)
    return refuse(fail("bad_request", `preset: ${mismatch}; leave preset out to have it detected`));
  const { files, bytes } = upload.value.manifest;
  const created = await createPod({
    ctx,
    caller,
    input: {
      name: input.name ?? nameFromFile(upload.value.filename),
      preset,
      plan_slug: input.plan_slug,
      region: input.region,
      server_id: input.server_id,
    },
    country,
    seed: { kind: "zip", incomingKey: incoming, filename: upload.value.filename, files, bytes },
  });
  return created.ok ? created : refuse(created);
}
