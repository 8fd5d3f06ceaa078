import type { DeployOutcome } from "../../shared/protocol/git";
import { roomMaker } from "../disk/host-cache";
import { LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT, LABEL_PREFIX, podNames } from "../docker/naming";
import { LABEL_HELPER } from "../docker/pod-user";
import { containerIp, inspectContainer, removeContainer } from "../docker/resources";
import { HELPER_BUILD, HELPER_CANDIDATE, LABEL_GIT_POD } from "../git/build";
import { gitHome, inspectRepo, limitsOf } from "../git/commit";
import { deploy, type GitDeps, rollback } from "../git/deploy";
import { asAgentError, DeployFailure } from "../git/failure";
import { listBranches } from "../git/fetch";
import { GitLookups } from "../git/lookups";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

type GitOps = "repo.branches" | "repo.inspect" | "pod.deploy" | "pod.rollback";

/**
 * Git deployments on the host (docs/git.md, agent/git/). One deploy or rollback at a time per pod
 * (the lock `git:<pod>`; the pod's own lock is taken only for the moment ~/app switches, so env
 * writes, logs and stops are not held up by a build). The same deployment id again joins the run
 * in progress, or answers from the outcome the host recorded: a retried step never builds twice.
 */
export function gitHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, GitOps> {
  const git: GitDeps = {
    config: deps.config,
    docker: deps.docker,
    ingress: deps.ingress,
    log: deps.log,
    exec: podStreams(deps),
    podLock: (pod, fn) => locks.run(pod, fn),
    makeRoom: roomMaker(deps.config, locks),
    send: deps.deployLog,
    pending: new Map(),
  };
  const inflight = new Map<string, Promise<DeployOutcome>>();
  const lookups = new GitLookups(deps.config.git.lookupsAtOnce);
  const once = (pod: string, id: string, fn: () => Promise<DeployOutcome>) => {
    const key = `${pod}/${id}`;
    let run = inflight.get(key);
    if (!run) {
      run = locks.run(`git:${pod}`, fn);
      inflight.set(key, run);
      const forget = () => inflight.delete(key);
      run.then(forget, forget);
    }
    return run;
  };
  const asError = (err: unknown) => {
    throw err instanceof DeployFailure ? asAgentError(err) : err;
  };

  return {
    "repo.branches": guard("repo.branches", async ({ source }, ctx) =>
      lookups
        .run(async () => listBranches(source, limitsOf(deps.config), await gitHome(deps.config), ctx.signal))
        .catch(asError),
    ),

    "repo.inspect": guard("repo.inspect", ({ source }, ctx) =>
      lookups.run(() => inspectRepo(deps.config, source, ctx.signal, git.makeRoom)).catch(asError),
    ),

    "pod.deploy": guard("pod.deploy", (p, ctx) =>
      once(p.name, p.deploymentId, () => deploy(git, p, ctx.signal)),
    ),

    "pod.rollback": guard("pod.rollback", (p, ctx) =>
      once(p.name, p.deploymentId, () => rollback(git, p, ctx.signal)),
    ),
  };
}

/**
 * At agent start: build and candidate containers left by a deploy the agent did not finish are
 * removed, and a pod whose ingress may still point at its removed candidate is routed back to its
 * own container.
 */
export async function removeGitLeftovers(deps: Pick<HandlerDeps, "docker" | "ingress" | "config" | "log">) {
  const prefix = deps.config.namePrefix;
  const list = await deps.docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PREFIX}=${prefix}`, LABEL_GIT_POD] },
  });
  for (const c of list) {
    const kind = c.Labels[LABEL_HELPER];
    const pod = c.Labels[LABEL_GIT_POD];
    if (!pod || (kind !== HELPER_BUILD && kind !== HELPER_CANDIDATE)) continue;
    await removeContainer(deps.docker, c.Id);
    deps.log.warn("removed a deploy's leftover container", { pod, kind });
    if (kind !== HELPER_CANDIDATE) continue;
    const n = podNames(prefix, pod);
    const main = await inspectContainer(deps.docker, n.container);
    const labels = main?.Config.Labels ?? {};
    const ip = main?.State.Running ? containerIp(main, n.network) : null;
    const podId = labels[LABEL_POD_ID];
    const domain = labels[LABEL_DOMAIN];
    if (ip && podId && domain)
      await deps.ingress.upsert({ pod, podId, domains: [domain], ip, port: Number(labels[LABEL_PORT]) });
  }
}
