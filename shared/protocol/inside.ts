import { z } from "zod";
import { NODE_VERSIONS } from "../catalog";
import { lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Ops that work inside a running (or, where said, stopped) pod as pod_user: the command runner,
 * the app's .env, logs, preset details, disk usage and the Node.js version. Spread into `ops` in
 * ./ops.ts; kept apart so that table stays short.
 */

/** What the public API accepts as a variable name; the file's loader reads a wider set back. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const ENV_FILE = "/home/pod_user/app/.env";
export const LOG_SOURCES = ["app", "web", "error", "build"] as const;
export type LogSource = (typeof LOG_SOURCES)[number];

/** the logs the host keeps a history of (docs/logs.md "History"); build.log is the deploys' own */
export const LOG_HISTORY_SOURCES = ["app", "web", "error"] as const satisfies readonly LogSource[];
/** the widest `since`…`until` of one read of the history, in days */
export const LOG_RANGE_MAX_DAYS = 31;

/** the longest a followed log stays open (`GET …/logs?follow=true`); the caller reconnects after */
export const LOG_FOLLOW_MAX_SECONDS = 30 * 60;

export const EXEC_MAX_ARG_BYTES = 8 * 1024;
export const EXEC_MAX_TIMEOUT_S = 300;
/** per stream; the rest is dropped and counted in the truncation marker */
export const EXEC_MAX_OUTPUT_BYTES = 1024 * 1024;

/** what a reload did: a failing install or build is a result, not an error */
export const ReloadResult = lazy(() =>
  z.discriminatedUnion("ok", [
    z.object({
      ok: z.literal(true),
      services: z.array(z.string()),
      depsInstalled: z.enum(["npm", "pip", "composer"]).nullable(),
      /** manifests found that the image has no tool for (go.mod: no image has Go) */
      unsupported: z.array(z.string()),
    }),
    z.object({ ok: z.literal(false), depsOutput: z.string(), exitCode: z.number().int().nullable() }),
  ]),
);

/** each install or build step of a reload; the tail of a failing step's output is kept */
export const RELOAD_STEP_TIMEOUT_S = 600;
export const RELOAD_MAX_OUTPUT_BYTES = 64 * 1024;

const EnvVars = lazy(() => z.record(z.string(), z.string()));
const EnvFile = lazy(() => z.object({ path: z.string(), vars: EnvVars() }));

export const insideOps = {
  /**
   * argv as pod_user in the running container, no shell; `timeoutS` kills the process group.
   * `exitCode` is null only when the engine reported none.
   */
  "pod.exec": () => ({
    params: z.object({
      name: PodName,
      command: z.array(z.string()).min(1),
      workdir: z.string().optional(),
      timeoutS: z.number().int().min(1).max(EXEC_MAX_TIMEOUT_S),
    }),
    result: z.object({
      exitCode: z.number().int().nullable(),
      stdout: z.string(),
      stderr: z.string(),
      durationMs: z.number().int(),
      timedOut: z.boolean(),
    }),
  }),
  /** the app's .env parsed as the pod's loader reads it; `exists` false when there is no file */
  "pod.env.get": () => ({
    params: z.object({ name: PodName }),
    result: EnvFile().extend({ exists: z.boolean() }),
  }),
  /** merge `vars` into .env (created if absent); `restartApp` restarts the app service if running */
  "pod.env.set": () => ({
    params: z.object({ name: PodName, vars: EnvVars(), restartApp: z.boolean() }),
    result: EnvFile().extend({ restarted: z.array(z.string()) }),
  }),
  /** drop `keys` from .env (`exists` false, nothing done, when there is no .env); restart as for set */
  "pod.env.unset": () => ({
    params: z.object({ name: PodName, keys: z.array(z.string()).min(1), restartApp: z.boolean() }),
    result: EnvFile().extend({ exists: z.boolean(), restarted: z.array(z.string()) }),
  }),
  /**
   * the last `lines` lines (oldest first), or with `grep` the last `lines` matches (newest first);
   * with `since`/`until` (ms since the epoch, both or neither) the same, from the log's history
   * within that range (agent/inside/history.ts), `truncated` when a bound cut the search short
   */
  "pod.logs": () => ({
    params: z.object({
      name: PodName,
      source: z.enum(LOG_SOURCES),
      lines: z.number().int().min(1).max(1000),
      grep: z.string().optional(),
      since: z.number().int().min(0).optional(),
      until: z.number().int().min(0).optional(),
    }),
    result: z.object({ lines: z.array(z.string()), exists: z.boolean(), truncated: z.boolean().optional() }),
  }),
  /**
   * Follow a log of a running pod (`GET …/logs?follow=true`): the host PUTs a live stream of
   * server-sent events into the relay `relay` (`/agent/relay/live/{id}`: first the last `lines`
   * lines or matches, then each new line as it is written, `: keepalive` comments, and an `end`
   * event) for at most `maxSeconds`, and answers as soon as that stream started (a bad pattern or a
   * host at its follow limit is an error before). See agent/inside/follow.ts.
   */
  "pod.logs.follow": () => ({
    params: z.object({
      name: PodName,
      source: z.enum(LOG_SOURCES),
      lines: z.number().int().min(0).max(1000),
      grep: z.string().optional(),
      relay: z.string().min(1).max(200),
      maxSeconds: z.number().int().min(1).max(LOG_FOLLOW_MAX_SECONDS),
    }),
    result: z.object({ exists: z.boolean() }),
  }),
  /** the runtime's version and the start command the app service would run, as the pod sees them */
  "pod.preset": () => ({
    params: z.object({ name: PodName, preset: z.enum(["static", "php", "nodejs", "python"]) }),
    result: z.object({ runtimeVersion: z.string().nullable(), startCommand: z.string().nullable() }),
  }),
  /**
   * `du` of /home/pod_user and of each of its top-level entries (bytes on disk), and the limit the
   * host enforces on the home (null or absent: none, a pod made before limits or an older agent)
   */
  "pod.disk": () => ({
    params: z.object({ name: PodName }),
    result: z.object({
      usedBytes: z.number().int(),
      limitBytes: z.number().int().nullable().optional(),
      paths: z.array(z.object({ path: z.string(), bytes: z.number().int() })),
    }),
  }),
  /** select a Node major in ~/.pod/node-version and restart the app; `changed` false when already on it */
  "pod.node-version": () => ({
    params: z.object({ name: PodName, version: z.enum(NODE_VERSIONS) }),
    result: z.object({ previous: z.string(), nodeVersion: z.string(), changed: z.boolean() }),
  }),
  /**
   * Install dependencies from the manifest in ~/app (package.json: npm install and, with a build
   * script, npm run build; requirements.txt: ~/app/.venv and pip install -r; composer.json:
   * composer install), output appended to
   * ~/logs/build.log, then restarts the preset's services. A failing step is a result
   * (`ok: false` with the tail of its output), not an error. Running pod only.
   */
  "pod.reload": () => ({
    params: z.object({ name: PodName, preset: z.enum(["static", "php", "nodejs", "python"]) }),
    result: ReloadResult(),
  }),
};
