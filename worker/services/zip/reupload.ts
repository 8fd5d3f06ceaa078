import { PRESET_SLUGS } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { discardStagedBlob, newStagingKey } from "../blobs/staging";
import type { ServiceContext, TeamCall } from "../context";
import { reloadPodApp } from "../inside/reload";
import { recordEventStatement } from "../pods/events";
import { powerPod } from "../pods/power";
import { callTarget, NOT_RUNNING, type PodTarget, podTarget } from "../pods/target";
import { readZipUpload, runtimeMismatch } from "./archive";
import { type StagedZip, stageZipForm } from "./form";

export interface ZipUploadView {
  status: "uploaded";
  files: number;
}

/** fetching 128 MiB, checking it and unpacking up to 1 GiB (the host gives up after 630 s) */
const DEPLOY_TIMEOUT_MS = 660_000;

/**
 * `POST /api/pods/{name}/zip`: replace the pod's ~/app with the archive. Everything about the
 * archive is checked before the pod is touched (a refused archive never starts a stopped pod); then
 * a stopped pod is started (contract), the host swaps the new app in (its .env kept unless the
 * archive has one), and a reload installs dependencies and restarts the services. A failed install
 * is the reload's 500 with `deps_output`: the new files are in place by then, and the error says so.
 */
export async function uploadZipToPod({
  ctx,
  teamId,
  input: { name, form: request },
}: TeamCall<{
  name: string;
  form: { body: ReadableStream<Uint8Array> | null; contentType: string | undefined };
}>): Promise<Result<ZipUploadView>> {
  const target = await podTarget(ctx, teamId, name, { changes: true });
  if (!target.ok) return target;
  const form = await stageZipForm(ctx, request, newStagingKey(target.value.hostId));
  if (!form.ok) return form;
  const blobKey = form.value.file.key;
  try {
    return await deployStaged(ctx, teamId, target.value, form.value.file);
  } finally {
    await discardStagedBlob(ctx.env, blobKey);
  }
}

async function deployStaged(
  ctx: ServiceContext,
  teamId: string,
  target: PodTarget,
  staged: StagedZip,
): Promise<Result<ZipUploadView>> {
  const { pod } = target.found;
  const { name } = pod;
  const upload = await readZipUpload(ctx.env, staged);
  if (!upload.ok) return upload;
  const preset = PRESET_SLUGS.find((p) => p === pod.preset);
  if (!preset) return fail("internal", `pod ${name} has an unknown preset ${pod.preset}`);
  const mismatch = runtimeMismatch(preset, upload.value);
  if (mismatch) return fail("bad_request", `zip: ${mismatch} (pod ${name} runs ${preset})`);

  if (pod.status === "stopped") {
    const started = await powerPod({ ctx, teamId, input: { name, action: "start" } });
    if (!started.ok) return started;
  } else if (pod.status !== "running") {
    return fail("bad_request", NOT_RUNNING);
  }

  const deployed = await callTarget(
    ctx,
    target,
    "pod.zip.deploy",
    { name, blobKey: staged.key },
    { timeoutMs: DEPLOY_TIMEOUT_MS },
  );
  if (!deployed.ok) return deployed;
  const { files, bytes } = deployed.value;
  await recordEventStatement(
    ctx.db,
    pod.id,
    "zip_uploaded",
    `${upload.value.filename} unpacked into ~/app (${files} files), replacing the app`,
    { files, bytes, archive: upload.value.filename },
  );

  const reloaded = await reloadPodApp({ ctx, teamId, input: { name } });
  if (!reloaded.ok) {
    return fail(
      reloaded.code,
      `the archive was unpacked (${files} files), but ${reloaded.message}`,
      reloaded.extra,
    );
  }
  return ok({ status: "uploaded", files });
}
