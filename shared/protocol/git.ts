import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Git deployments (docs/git.md). The Worker owns the configuration, the deployment records and
 * the order of deploys (one at a time per pod, the newest queued one wins); a host does the work:
 * it fetches the branch with `git` on the host (the token rides in git's environment for that one
 * command and never enters the pod), installs and builds in a build container of its own (its own
 * CPU, memory, pids and time limits, the pod's home volume and dependency cache mounted), starts
 * the new release beside the serving one and moves the ingress only once the release's port
 * answers. A release that fails anywhere leaves the old one serving. Releases are kept in the
 * pod's home (`~/releases/<deployment id>`, `~/app` a symlink to the current one), so a rollback
 * switches without rebuilding.
 *
 * Build output travels as `agent:deploy-log` messages (./messages.ts) while the deploy runs.
 * Spread into `ops` in ./ops.ts like ./inside.ts.
 */

const Preset = lazy(() => z.enum(["static", "php", "nodejs", "python"]));

/** Why a deploy failed: the `class` of a `deploy_failed` event (spec: `unknown` when nothing matched). */
export const DeployFailureClass = lazy(() =>
  z.enum([
    "auth",
    "branch_not_found",
    "repo_unreachable",
    "repo_too_large",
    "dependency_install",
    "build_script",
    "missing_start",
    "port_mismatch",
    "timeout",
    /** the pod's daily build minutes were spent (the Worker's, before the deploy is dispatched) */
    "build_budget",
    "unknown",
  ]),
);
export type DeployFailureClass = Built<typeof DeployFailureClass>;

/** Where the code comes from. The Worker decrypts the token for this one command only. */
export const RepoSource = lazy(() =>
  z.object({
    /** https:// (http:// only for loopback hosts when the control plane allows it, for local development) */
    url: z.string().min(1).max(2048),
    branch: z.string().min(1).max(255),
    /** a personal access token: sent as HTTP basic auth to the git host, never written anywhere */
    token: z.string().min(1).max(1024).optional(),
  }),
);
export type RepoSource = Built<typeof RepoSource>;

/** What a repository's files say about building and running it (`GET /api/repos/inspect`, each deploy). */
export const DetectedCommands = lazy(() =>
  z.object({
    preset: Preset(),
    /** argv-free shell command lines, shown to the user and run in the build container */
    install_command: z.string().nullable(),
    build_command: z.string().nullable(),
    start_command: z.string().nullable(),
    port: z.number().int().min(1).max(65535),
  }),
);
export type DetectedCommands = Built<typeof DetectedCommands>;

const Commit = lazy(() =>
  z.object({ sha: z.string().regex(/^[0-9a-f]{40}$/), message: z.string().max(4096) }),
);

/** A deploy's (or rollback's) end: success with the release now serving, or the failure's class. */
/** optional: an agent of an earlier version does not measure it (the Worker then counts start to end) */
const BuildMs = lazy(() => z.number().int().min(0).max(86_400_000).optional());

export const DeployOutcome = lazy(() =>
  z.discriminatedUnion("ok", [
    z.object({
      ok: z.literal(true),
      commit: Commit(),
      /** the release now serving: the id of the deployment that built it */
      release: z.string().min(1).max(64),
      detected: DetectedCommands(),
      /** releases still kept on the host after this one (newest first), for rollback */
      kept: z.array(z.string()).max(20),
      /** the deploy's wall time on the host (ms): what the plan's daily build budget counts */
      build_ms: BuildMs(),
    }),
    z.object({
      ok: z.literal(false),
      class: DeployFailureClass(),
      /** one line for the event and the API, the token never in it */
      message: z.string().max(2000),
      /** known once the fetch succeeded */
      commit: Commit().nullable(),
      build_ms: BuildMs(),
    }),
  ]),
);
export type DeployOutcome = Built<typeof DeployOutcome>;

export const gitOps = {
  /** `git ls-remote` on any host: the branches and the default branch (HEAD's target) */
  "repo.branches": () => ({
    params: z.object({ source: RepoSource().omit({ branch: true }) }),
    result: z.object({ branches: z.array(z.string()).max(1000), default_branch: z.string().nullable() }),
  }),
  /** a shallow fetch of `branch` on any host into a temporary directory, detection, the directory removed */
  "repo.inspect": () => ({
    params: z.object({ source: RepoSource() }),
    result: DetectedCommands(),
  }),
  /**
   * Fetch, build in a build container, start beside the serving release, switch once the port
   * answers; `deploymentId` names the release and the log. The same id again (a retried step)
   * joins the run in progress or answers from the host's record; it never builds twice.
   */
  "pod.deploy": () => ({
    params: z.object({
      name: PodName,
      deploymentId: z.string().min(1).max(64),
      source: RepoSource(),
      preset: Preset(),
      /** the user's `build_command`; null: detected */
      buildCommand: z.string().max(2000).nullable(),
      /**
       * what is left of the pod's daily build budget (ms): the build container is stopped when it
       * runs out, as when the host's own limit does (docs/git.md "Build budget"); absent: the host's
       */
      timeoutMs: z.number().int().min(1_000).max(86_400_000).optional(),
    }),
    result: DeployOutcome(),
  }),
  /** Switch back to a kept release (health-gated like a deploy); not_found when it is no longer kept. */
  "pod.rollback": () => ({
    params: z.object({
      name: PodName,
      deploymentId: z.string().min(1).max(64),
      release: z.string().min(1).max(64),
    }),
    result: DeployOutcome(),
  }),
};
