import type { PresetSlug } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Caller } from "../auth/caller";
import type { ServiceContext } from "../context";
import { createPod } from "../pods/create";
import { readPodRow } from "../pods/lookup";
import { podNameFrom } from "../pods/names";
import type { PodView } from "../pods/view";
import { type ConnectedView, checkConnectInput, storeConfig } from "./config";
import { enqueueDeployment } from "./queue";
import { inspectRepository } from "./repos";

export interface FromRepoInput {
  repo_url: string;
  branch?: string;
  name?: string;
  preset?: PresetSlug;
  plan_slug: string;
  region?: string;
  auth_token?: string;
  build_command?: string;
  auto_deploy?: boolean;
}

/** "https://github.com/Acme/My_Site.git" → "my-site-k3x9qa": the repository's name and a random tail. */
export const nameFromRepo = (repoUrl: string): string =>
  podNameFrom(
    new URL(repoUrl).pathname
      .replace(/\/+$/, "")
      .replace(/\.git$/i, "")
      .split("/")
      .pop() ?? "",
  );

/**
 * `POST /api/pods/from-repo`: the input is checked first; without a preset the repository is
 * inspected on a host (`repo.inspect`) to pick one. The pod is made by the pod-create workflow like
 * any other (202, `creating`), the repository connected at once (its hook created), and the first
 * deployment (trigger `manual`) queued: its workflow waits until the pod runs, then deploys.
 */
export async function createPodFromRepo({
  ctx,
  caller,
  input,
  country,
}: {
  ctx: ServiceContext;
  caller: Caller;
  input: FromRepoInput;
  country?: string;
}): Promise<Result<{ pod: PodView; git: ConnectedView }>> {
  const checked = checkConnectInput(ctx, input);
  if (!checked.ok) return checked;
  let preset = input.preset;
  if (!preset) {
    const detected = await inspectRepository({ ctx, input });
    if (!detected.ok) return detected;
    preset = detected.value.preset;
  }
  const created = await createPod({
    ctx,
    caller,
    input: {
      name: input.name ?? nameFromRepo(input.repo_url),
      preset,
      plan_slug: input.plan_slug,
      region: input.region,
    },
    country,
  });
  if (!created.ok) return created;
  const row = await readPodRow(ctx.db, created.value.id);
  if (!row) return fail("internal", `pod ${created.value.name} vanished right after its creation`);
  const git = await storeConfig(ctx, row.pod, input);
  if (!git.ok) return git;
  const first = await enqueueDeployment(ctx.env, ctx.db, row.pod.id, { trigger: "manual" });
  const last_deployment = {
    id: first.id,
    status: first.status,
    commit_sha: null,
    commit_message: null,
    created_at: first.createdAt,
    finished_at: null,
  };
  return ok({ pod: created.value, git: { ...git.value, last_deployment } });
}
