import { ENV_FILE, ENV_NAME } from "../../shared/protocol/inside";
import { podDiskOf } from "../disk/pod-disk";
import { podNames } from "../docker/naming";
import { RuncContainers } from "../docker/runc";
import { AgentError } from "../errors";
import { runCommand } from "../inside/command";
import { parseDotenv, setDotenvVars, unsetDotenvVars } from "../inside/dotenv";
import { readEnvFile, writeEnvFile } from "../inside/env-file";
import { ExecHelpers } from "../inside/exec-helper";
import { LogFollows } from "../inside/follow";
import { LogHistory } from "../inside/history";
import { readLog } from "../inside/logs";
import { reloadApp } from "../inside/reload";
import { diskUsage, probePreset, restartAppService, switchNodeVersion } from "../inside/runtime";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

type InsideOps =
  | "pod.exec"
  | "pod.env.get"
  | "pod.env.set"
  | "pod.env.unset"
  | "pod.logs"
  | "pod.logs.follow"
  | "pod.preset"
  | "pod.disk"
  | "pod.node-version"
  | "pod.reload";

/**
 * Working inside a pod: commands, .env, logs and read-outs. Reads take no lock (a command may run
 * for minutes and must not hold up a stop); changes of a file (.env, node-version) are a read, an
 * edit and an atomic write under the pod's lock, so two concurrent PUTs both land.
 */
export function insideHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, InsideOps> {
  const { docker, log } = deps;
  const prefix = deps.config.namePrefix;
  const disk = podDiskOf(deps.config.podDiskRoot);
  // commands through `runc exec` where the host has runc's state of the engine's containers
  const runc = deps.config.runcRoot ? new RuncContainers(docker, deps.config.runcRoot) : null;
  // a helper per pod that runs commands, so that a command is a fork in the pod, not a runc start
  const helpers = runc ? new ExecHelpers(runc, log) : null;
  const follows = new LogFollows(podStreams(deps), prefix, deps.relay, log);
  const history = new LogHistory(docker, prefix, deps.config.stateDir, locks, log, {
    exec: podStreams(deps),
    helper:
      runc && helpers
        ? (pod, argv, o) => helpers.runOwn(runc, podNames(prefix, pod).container, argv, o)
        : undefined,
  });

  const checkNames = (what: string, keys: string[]) => {
    for (const key of keys) {
      if (!ENV_NAME.test(key))
        throw new AgentError("bad_request", `${what}: invalid variable name ${JSON.stringify(key)}`);
    }
  };

  return {
    "pod.exec": guard("pod.exec", (q, ctx) =>
      runCommand(docker, runc, helpers, prefix, q.name, q, ctx.signal),
    ),

    "pod.env.get": guard("pod.env.get", async ({ name }) => {
      const file = await readEnvFile(docker, prefix, name);
      return { path: ENV_FILE, vars: parseDotenv(file.text), exists: file.exists };
    }),

    "pod.env.set": guard("pod.env.set", async ({ name, vars, restartApp }) => {
      checkNames("vars", Object.keys(vars));
      if (Object.values(vars).some((v) => v.includes("\0")))
        throw new AgentError("bad_request", "vars: values must not contain NUL");
      const text = await locks.run(name, async () => {
        const next = setDotenvVars((await readEnvFile(docker, prefix, name)).text, vars);
        await writeEnvFile(docker, prefix, name, next);
        return next;
      });
      const restarted = restartApp && (await restartAppService(docker, prefix, name, log)) ? ["app"] : [];
      return { path: ENV_FILE, vars: parseDotenv(text), restarted };
    }),

    "pod.env.unset": guard("pod.env.unset", async ({ name, keys, restartApp }) => {
      const edit = await locks.run(name, async () => {
        const file = await readEnvFile(docker, prefix, name);
        if (!file.exists) return { ...file, changed: false };
        const next = unsetDotenvVars(file.text, keys);
        if (next !== file.text) await writeEnvFile(docker, prefix, name, next);
        return { exists: true, text: next, changed: next !== file.text };
      });
      const restarted =
        edit.changed && restartApp && (await restartAppService(docker, prefix, name, log)) ? ["app"] : [];
      return { path: ENV_FILE, vars: parseDotenv(edit.text), exists: edit.exists, restarted };
    }),

    // with a range: the history the host keeps (../inside/history.ts), collected up to now first
    "pod.logs": guard("pod.logs", ({ name, since, until, ...q }) => {
      if (since === undefined && until === undefined) return readLog(docker, prefix, name, q);
      if (since === undefined || until === undefined || until < since)
        throw new AgentError("bad_request", "since and until: both, and until not before since");
      return history.read(name, { ...q, since, until });
    }),

    // answered once the stream started; it goes on beside the control socket (../inside/follow.ts)
    "pod.logs.follow": guard("pod.logs.follow", ({ name, ...q }) => follows.start(name, q)),

    "pod.preset": guard("pod.preset", ({ name, preset }) => probePreset(docker, prefix, name, preset)),

    // `du` names the big entries; the limit is the home's qgroup's, the one writes fail against.
    "pod.disk": guard("pod.disk", async ({ name }) => {
      const [usage, quota] = await Promise.all([
        diskUsage(docker, prefix, name),
        disk ? disk.usage(podNames(prefix, name).volume) : null,
      ]);
      return { ...usage, limitBytes: quota?.maxReferencedBytes ?? null };
    }),

    "pod.node-version": guard("pod.node-version", async ({ name, version }) => {
      const switched = await locks.run(name, () => switchNodeVersion(docker, prefix, name, version));
      if (switched.changed) await restartAppService(docker, prefix, name, log);
      return { previous: switched.previous, nodeVersion: version, changed: switched.changed };
    }),

    // Under the lock: a stop or a second reload waits for the install instead of racing it.
    "pod.reload": guard("pod.reload", ({ name, preset }) =>
      locks.run(name, () => reloadApp(docker, prefix, name, preset, log)),
    ),
  };
}
