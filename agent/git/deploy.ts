import { utimes } from "node:fs/promises";
import type { ContainerInspectInfo } from "dockerode";
import type { DeployOutcome, DetectedCommands, RepoSource } from "../../shared/protocol/git";
import type { AgentConfig } from "../config";
import { capDeployCache, deployCacheCap, type MakeRoom, withRoom } from "../disk/host-cache";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { podNames } from "../docker/naming";
import { inspectContainer } from "../docker/resources";
import { AgentError } from "../errors";
import type { Ingress } from "../ingress/nginx";
import type { Logger } from "../logger";
import { type BuildBox, buildContainerOptions, buildLimitsFor, startBuildBox } from "./build";
import { dependencyKey, detectIn, gitHome, hostCacheFull, limitsOf } from "./commit";
import { DEPENDENCY_DIR, npmStartOf } from "./detect";
import { DeployFailure } from "./failure";
import { type FetchedCommit, fetchBranch, tidyRepo } from "./fetch";
import { DeployLog, type DeployLogMessage } from "./log";
import { prepareRelease } from "./prepare";
import { keepAfter, PodRecord } from "./record";
import { Redactor } from "./redact";
import {
  appendBuildLog,
  checkReleaseId,
  currentRelease,
  discardRelease,
  findWebRoot,
  hasStartOverride,
  pruneReleases,
  releaseExists,
} from "./release";
import { type StandbyCandidate, standbyBaseline, standbyRoute } from "./standby";
import { healthGatedSwitch } from "./switch";
import { checkSourceUrl } from "./target";
import { archiveStream } from "./tree";

/** What a deploy works with; agent/handlers/git.ts builds it from the handler deps. */
export interface GitDeps {
  config: AgentConfig;
  docker: DockerClient;
  ingress: Ingress;
  log: Logger;
  exec: StreamExecutor;
  podLock<T>(pod: string, fn: () => Promise<T>): Promise<T>;
  /** room in a full host cache: other pods' deploy caches removed (agent/disk/host-cache.ts) */
  makeRoom?: MakeRoom;
  send?: (m: DeployLogMessage) => boolean;
  /** per pod: the last deploy's clean-up still running (the next deploy of the pod waits for it) */
  pending: Map<string, Promise<void>>;
}

type Preset = DetectedCommands["preset"];

export interface DeployParams {
  name: string;
  deploymentId: string;
  source: RepoSource;
  preset: Preset;
  buildCommand: string | null;
  /** what is left of the pod's daily build budget (ms), from the Worker: the build's time limit when lower */
  timeoutMs?: number;
}

/**
 * `pod.deploy`, once per deployment id: fetch, detect, unpack into a new release, install (or reuse
 * the serving release's dependencies when their files are unchanged), build, switch (health-gated),
 * prune. A failure the user can act on is an outcome (`ok: false` with its class); the engine or
 * the agent failing is an error (the Worker retries the step, and the retry starts over).
 */
export async function deploy(deps: GitDeps, p: DeployParams, signal: AbortSignal): Promise<DeployOutcome> {
  const id = checkReleaseId(p.deploymentId);
  const record = new PodRecord(deps.config, p.name);
  const done = await record.outcome(id);
  if (done) return done;
  await deps.pending.get(p.name);
  const { docker } = deps;
  const names = podNames(deps.config.namePrefix, p.name);
  const main = await inspectContainer(docker, names.container);
  if (!main) throw new AgentError("not_found", `pod ${p.name} has no container on this host`);
  const image = deps.config.images[p.preset];
  const route = standbyRoute(deps.ingress, p.name, p.preset, main, names.network);
  const redactor = new Redactor(p.source.token);
  const log = new DeployLog(id, redactor, deps.send);
  const started = Date.now();
  let commit: FetchedCommit | null = null;
  let box: BuildBox | null = null;
  let boxStart: Promise<BuildBox> | null = null;
  let switched = false;
  let kept: string[] | null = null;
  let outcome: DeployOutcome;
  try {
    const home = await gitHome(deps.config);
    const room = deps.makeRoom;
    // The build container starts while git fetches (it is most of a warm deploy's fixed cost).
    boxStart = startBox(deps, p.name, id, image, main, signal, p.timeoutMs);
    boxStart.catch(() => undefined);
    // The standby goes first in the vhost once the last deploy's box is gone (a candidate in it may
    // still be finishing requests); the reload runs beside the unpack and install.
    if (route)
      void boxStart.then(
        () => route.prefer(main),
        () => undefined,
      );
    // checked before it is logged: a URL with credentials in it is refused, never written
    const url = checkSourceUrl(p.source.url, deps.config.git.allowHttpLoopback);
    log.note(`fetching branch ${p.source.branch} of ${url.href}`);
    // a full host cache: other pods' deploy caches make room, and the fetch runs once more
    commit = await withRoom(
      () => fetchBranch(p.source, record.repoDir, limitsOf(deps.config), home, signal),
      hostCacheFull,
      room && (() => room(p.name)),
    );
    // the cache's last use, for the least-recently-used order of `makeRoom`
    const now = new Date();
    await utimes(record.repoDir, now, now).catch(() => undefined);
    log.note(`commit ${commit.sha.slice(0, 12)} ${commit.message.split("\n")[0]?.slice(0, 200) ?? ""}`);
    const { detected, tree, text } = await detectIn(
      record.repoDir,
      commit.sha,
      home,
      p.preset,
      p.buildCommand,
    );
    log.note(
      `detected: install ${detected.install_command ?? "-"}; build ${detected.build_command ?? "-"}; start ${detected.start_command ?? "-"}; port ${detected.port}`,
    );
    const depsKey = dependencyKey(tree.read, p.preset, detected);

    const releases = await record.releases();
    // Any kept release (newest first) whose dependency files and install command were the same.
    const depDir = DEPENDENCY_DIR[p.preset];
    const prev = depsKey ? releases.releases.find((r) => r.depsKey === depsKey) : undefined;

    box = await boxStart;
    // the new release starts on the standby at the end of the build's exec (./standby.ts)
    const baseline = route && detected.start_command ? await standbyBaseline(main, route.vhost.ip) : null;
    log.note("build container ready; unpacking the commit");
    const archive = archiveStream(record.repoDir, commit.sha, home, deps.config.git.maxTreeBytes);
    let candidate: StandbyCandidate | null;
    try {
      ({ candidate } = await prepareRelease(deps.exec, {
        box,
        id,
        tar: archive.stream,
        reuseFrom: depDir && prev ? { release: prev.id, dir: depDir } : null,
        install: detected.install_command,
        build: detected.build_command,
        path: podPath(main),
        candidate: baseline
          ? { preset: p.preset, npm: p.preset === "nodejs" ? npmStartOf(text["package.json"]) : null }
          : null,
        log,
        signal,
      }));
    } finally {
      archive.kill();
    }
    // a static site's build output (vite: dist/, next export: out/) is what the pod serves
    const webRoot =
      p.preset === "static" && detected.build_command ? await findWebRoot(docker, box.name, id) : null;
    if (webRoot) log.note(`serving the build output ${webRoot}/`);
    if ((p.preset === "nodejs" || p.preset === "python") && !detected.start_command) {
      if (!(await hasStartOverride(docker, box.name)))
        throw new DeployFailure(
          "missing_start",
          p.preset === "nodejs"
            ? "no start command: add a start script to package.json, a Procfile web: line or server.js"
            : "no start command: add a Procfile web: line or app.py",
        );
    }
    // the switch's record must fit first: a full state dir fails here, the old release serving
    await record.checkRoom();
    await healthGatedSwitch(
      {
        docker,
        ingress: deps.ingress,
        prefix: deps.config.namePrefix,
        podLock: (fn) => deps.podLock(p.name, fn),
        startTimeoutMs: deps.config.git.startTimeoutMs,
      },
      {
        pod: p.name,
        release: id,
        webRoot,
        previous: releases.current ?? "initial",
        preset: p.preset,
        box,
        log,
        signal,
        standby: route ? { route, baseline, candidate } : null,
      },
    );
    switched = true;
    kept = await settle(record, id, {
      id,
      commit,
      detected,
      depsKey,
      webRoot,
      at: Date.now(),
    });
    log.note(
      `deployed in ${((Date.now() - started) / 1000).toFixed(1)} s; releases kept: ${kept.join(", ")}`,
    );
    outcome = { ok: true, commit, release: id, detected, kept, build_ms: Date.now() - started };
  } catch (err) {
    // Interrupted (the agent stops, the command's own timeout): nothing is recorded, a retry starts over.
    if (signal.aborted)
      throw new AgentError("unavailable", `the deploy was interrupted: ${String(signal.reason)}`);
    const failure = asFailure(err, box);
    if (!failure) throw err;
    log.note(`failed (${failure.cls}): ${failure.message}`);
    outcome = {
      ok: false,
      class: failure.cls,
      message: redactor.redact(failure.message).slice(0, 2000),
      commit,
      build_ms: Date.now() - started,
    };
  } finally {
    if (!box && boxStart) box = await boxStart.catch(() => null);
    // the pod's port first again (done already after a switch on the standby) before the box goes
    await route
      ?.restore()
      .catch((e: unknown) => deps.log.warn("restoring the vhost failed", { error: String(e) }));
    // no pod keeps more than its share of the host cache: a larger cache goes, the next deploy fetches afresh
    await capDeployCache(record.repoDir, deployCacheCap(deps.config)).then(
      (dropped) => dropped && log.note("the repository cache is over this host's share for one pod: dropped"),
      (e: unknown) => deps.log.warn("dropping a large deploy cache failed", { error: String(e) }),
    );
    await cleanup(deps, p.name, box, id, switched, log, kept);
  }
  await record.saveOutcome(id, outcome);
  return outcome;
}

/** `pod.rollback`: switch to a kept release, health-gated, without building. */
export async function rollback(
  deps: GitDeps,
  p: { name: string; deploymentId: string; release: string },
  signal: AbortSignal,
): Promise<DeployOutcome> {
  const id = checkReleaseId(p.deploymentId);
  const target = checkReleaseId(p.release);
  const record = new PodRecord(deps.config, p.name);
  const done = await record.outcome(id);
  if (done) return done;
  await deps.pending.get(p.name);
  const { docker } = deps;
  const names = podNames(deps.config.namePrefix, p.name);
  const main = await inspectContainer(docker, names.container);
  if (!main) throw new AgentError("not_found", `pod ${p.name} has no container on this host`);
  const releases = await record.releases();
  const rel = releases.releases.find((r) => r.id === target);
  if (!rel) throw new AgentError("not_found", `release ${target} is not kept on this host`);
  const log = new DeployLog(id, new Redactor(undefined), deps.send);
  const started = Date.now();
  const image = deps.config.images[rel.detected.preset];
  const box = await startBox(deps, p.name, id, image, main, signal);
  const route = standbyRoute(deps.ingress, p.name, rel.detected.preset, main, names.network);
  void route?.prefer(main);
  let outcome: DeployOutcome;
  let kept: string[] | null = null;
  try {
    if (!(await releaseExists(docker, box.name, target)))
      throw new AgentError("not_found", `release ${target} is no longer in the pod's home`);
    log.note(`rolling back to release ${target} (commit ${rel.commit.sha.slice(0, 12)})`);
    await record.checkRoom();
    await healthGatedSwitch(
      {
        docker,
        ingress: deps.ingress,
        prefix: deps.config.namePrefix,
        podLock: (fn) => deps.podLock(p.name, fn),
        startTimeoutMs: deps.config.git.startTimeoutMs,
      },
      {
        pod: p.name,
        release: target,
        webRoot: rel.webRoot,
        previous: await currentRelease(docker, box.name),
        preset: rel.detected.preset,
        box,
        log,
        signal,
        standby: route ? { route, baseline: null, candidate: null } : null,
      },
    );
    kept = await settle(record, target, null);
    outcome = {
      ok: true,
      commit: rel.commit,
      release: target,
      detected: rel.detected,
      kept,
      build_ms: Date.now() - started,
    };
  } catch (err) {
    if (signal.aborted)
      throw new AgentError("unavailable", `the rollback was interrupted: ${String(signal.reason)}`);
    const failure = asFailure(err, box);
    if (!failure) throw err;
    outcome = {
      ok: false,
      class: failure.cls,
      message: failure.message.slice(0, 2000),
      commit: rel.commit,
      build_ms: Date.now() - started,
    };
  } finally {
    await route
      ?.restore()
      .catch((e: unknown) => deps.log.warn("restoring the vhost failed", { error: String(e) }));
    await appendBuildLog(docker, box.name, log.close()).catch(() => undefined);
    if (kept) pruneLater(deps, p.name, box, kept);
    else await box.remove();
  }
  await record.saveOutcome(id, outcome);
  return outcome;
}

/** the pod's PATH (its image's): what the install and build find their tools on */
function podPath(main: ContainerInspectInfo): string {
  const entry = (main.Config.Env ?? []).find((e) => e.startsWith("PATH="));
  return entry ? entry.slice(5) : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

/** Record the serving release and which releases stay (it and the newest others). */
async function settle(
  record: PodRecord,
  serving: string,
  added: Parameters<PodRecord["saveReleases"]>[0]["releases"][number] | null,
): Promise<string[]> {
  const r = await record.releases();
  const all = added ? [added, ...r.releases.filter((x) => x.id !== added.id)] : r.releases;
  const keep = keepAfter({ current: serving, releases: all }, serving);
  await record.saveReleases({ current: serving, releases: all.filter((x) => keep.includes(x.id)) });
  return keep;
}

/**
 * The pod's build container, in the running pod's network namespace, within the pod's memory and
 * the time left of its build budget (./build.ts `buildLimitsFor`).
 */
const startBox = (
  deps: GitDeps,
  pod: string,
  deployment: string,
  image: string,
  main: ContainerInspectInfo,
  signal: AbortSignal,
  budgetMs?: number,
): Promise<BuildBox> => {
  const limits = buildLimitsFor(deps.config.git.build, main.HostConfig.Memory, budgetMs);
  return startBuildBox(
    deps.docker,
    buildContainerOptions(
      deps.config.namePrefix,
      pod,
      deployment,
      image,
      limits,
      main.State.Running ? main.Id : null,
    ),
    limits.timeoutMs,
    signal,
  );
};

/**
 * After a switch: old releases are deleted and the build container removed without the caller
 * waiting (deleting a large node_modules takes a while). The next deploy or rollback of the pod
 * waits for the prune before it starts, so a prune never meets a new release; not for the box's
 * hold (a standby candidate finishing requests in flight): the next deploy's box replaces it.
 */
function pruneLater(deps: GitDeps, pod: string, box: BuildBox, keep: string[]) {
  const prune = pruneReleases(deps.docker, box.name, keep).catch(async (e: unknown) => {
    // the pod's deletion (or the agent's stop) took the container away meanwhile: nothing to say
    if ((await inspectContainer(deps.docker, box.id))?.State.Running)
      deps.log.warn("pruning old releases failed", { error: String(e) });
  });
  const tidy = gitHome(deps.config)
    .then((home) => tidyRepo(new PodRecord(deps.config, pod).repoDir, home, deps.config.git.fetchTimeoutMs))
    .catch(() => undefined);
  const work = Promise.all([prune, tidy]).then(() => undefined);
  deps.pending.set(pod, work);
  void work.then(() => {
    if (deps.pending.get(pod) === work) deps.pending.delete(pod);
    return box.remove().catch(() => undefined);
  });
}

function asFailure(err: unknown, box: BuildBox | null): DeployFailure | null {
  if (err instanceof DeployFailure) return err;
  if (box?.timedOut) return new DeployFailure("timeout", "the deploy did not finish in time");
  return null;
}

/** What a failed deploy made goes: its release (unless it serves), then the build container. */
async function cleanup(
  deps: GitDeps,
  pod: string,
  box: BuildBox | null,
  id: string,
  switched: boolean,
  log: DeployLog,
  kept: string[] | null,
) {
  const text = log.close();
  if (!box) return;
  if (kept) {
    await appendBuildLog(deps.docker, box.name, text).catch(() => undefined);
    pruneLater(deps, pod, box, kept);
    return;
  }
  if (box.timedOut) await box.revive().catch(() => undefined);
  if (!switched) {
    await discardRelease(deps.docker, box.name, id).catch((e: unknown) =>
      deps.log.warn("discarding a failed release failed", { error: String(e) }),
    );
  }
  await appendBuildLog(deps.docker, box.name, text).catch(() => undefined);
  await box.remove();
}
