import { spawn } from "node:child_process";
import pc from "picocolors";
import type { components } from "../api/openapi";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { podName } from "../lib/link";
import { table } from "../lib/output";
import { confirm } from "../lib/tty";

type Pod = components["schemas"]["Pod"];

/**
 * The pod's public address. The API names the pod's domain; the scheme follows the API's (http for a
 * local `npm start`, https in production), and PODHOST_POD_PORT adds the ingress port where it is
 * not the scheme's default (8080 under `npm start`).
 */
export function podUrl(ctx: Ctx, pod: Pick<Pod, "domain">): string {
  const scheme = new URL(ctx.api.base).protocol;
  const port = process.env.PODHOST_POD_PORT ? `:${process.env.PODHOST_POD_PORT}` : "";
  return `${scheme}//${pod.domain}${port}/`;
}

const colourStatus = (s: string) =>
  s === "running" ? pc.green(s) : s === "error" || s === "suspended" ? pc.red(s) : pc.yellow(s);

export async function ls(ctx: Ctx, _args: string[], opts: { all?: boolean }) {
  requireCredential(ctx);
  const first = await ctx.api.call("get", "/api/pods", { query: { limit: 100 } });
  const pods = [...first.pods];
  while (opts.all && pods.length < first.total) {
    const next = await ctx.api.call("get", "/api/pods", { query: { limit: 100, offset: pods.length } });
    if (next.pods.length === 0) break;
    pods.push(...next.pods);
  }
  ctx.out.result({ ...first, pods }, () =>
    pods.length === 0
      ? "No pods yet: podhost pods create NAME, or podhost deploy --create NAME"
      : table(
          ["NAME", "STATUS", "PRESET", "PLAN", "URL"],
          pods.map((p) => [p.name, colourStatus(p.status), p.preset, p.plan_slug, podUrl(ctx, p)]),
        ),
  );
}

function describe(ctx: Ctx, p: Pod): string {
  return [
    `${pc.bold(p.name)}  ${colourStatus(p.status)}`,
    `url:     ${podUrl(ctx, p)}`,
    `preset:  ${p.preset}   plan: ${p.plan_slug} (${p.cpu} CPU, ${p.memory} memory, ${p.disk} disk)`,
    `region:  ${p.region}   ssh: ${p.ssh_port ? `ssh -p ${p.ssh_port} ${p.ssh_user}@…` : "not ready"}`,
    p.app_health_diagnosis ? `health:  ${p.app_health_diagnosis}` : "",
    `created: ${p.created_at}`,
  ]
    .filter(Boolean)
    .join("\n");
}

export async function info(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  const pod = await ctx.api.call("get", "/api/pods/{name}", { params: { name } });
  ctx.out.result({ ...pod, url: podUrl(ctx, pod) }, () => describe(ctx, pod));
}

/** Polls until the pod leaves `creating`; `error` is a failed deploy (exit 5). */
export async function waitRunning(ctx: Ctx, name: string, timeoutMs = 300_000): Promise<Pod> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pod = await ctx.api.call("get", "/api/pods/{name}", { params: { name } });
    if (pod.status === "running") return pod;
    if (pod.status === "error" || pod.status === "deleted" || pod.status === "suspended") {
      const events = await ctx.api
        .call("get", "/api/pods/{name}/events", { params: { name } })
        .catch(() => undefined);
      const why = events?.events.find((e) => e.type === "error")?.message;
      throw new CliError(`the pod ${name} is ${pod.status}${why ? `: ${why}` : ""}`, EXIT.deployFailed);
    }
    if (Date.now() > deadline)
      throw new CliError(
        `the pod ${name} is still ${pod.status} after ${timeoutMs / 1000} s`,
        EXIT.deployFailed,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function create(
  ctx: Ctx,
  args: string[],
  opts: { preset: "static" | "php" | "nodejs" | "python"; plan?: string; region?: string; wait?: boolean },
) {
  requireCredential(ctx);
  const [name] = args;
  let pod = await ctx.api.call("post", "/api/pods", {
    body: { name: name ?? "", preset: opts.preset, plan_slug: opts.plan, region: opts.region },
  });
  if (opts.wait) pod = await waitRunning(ctx, pod.name);
  ctx.out.result({ ...pod, url: podUrl(ctx, pod) }, () => describe(ctx, pod));
}

export function lifecycle(verb: "start" | "stop" | "restart" | "reload") {
  return async (ctx: Ctx, args: string[]) => {
    requireCredential(ctx);
    const name = await podName(args[0]);
    const params = { params: { name } };
    const result =
      verb === "start"
        ? await ctx.api.call("post", "/api/pods/{name}/start", params)
        : verb === "stop"
          ? await ctx.api.call("post", "/api/pods/{name}/stop", params)
          : verb === "restart"
            ? await ctx.api.call("post", "/api/pods/{name}/restart", params)
            : await ctx.api.call("post", "/api/pods/{name}/reload", params);
    const past = { start: "started", stop: "stopped", restart: "restarted", reload: "reloaded" }[verb];
    ctx.out.result(result, () => `${name} ${past}.`);
  };
}

export async function resize(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const [plan, pod] = args;
  const name = await podName(pod);
  const view = await ctx.api.call("post", "/api/pods/{name}/resize", {
    params: { name },
    body: { plan_slug: plan ?? "" },
  });
  ctx.out.result(view, () => `${name} is on the plan ${view.plan_slug} (${view.cpu} CPU, ${view.memory}).`);
}

export async function clone(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const [newName, pod] = args;
  const name = await podName(pod);
  const view = await ctx.api.call("post", "/api/pods/{name}/clone", {
    params: { name },
    body: { new_name: newName ?? "" },
  });
  ctx.out.result(view, () => `${name} cloned as ${view.name} (${view.status}).`);
}

export async function rm(ctx: Ctx, args: string[], opts: { yes?: boolean }) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  if (!opts.yes && !(await confirm(`Delete the pod ${name} and everything in it?`, "--yes")))
    throw new CliError("not deleted", EXIT.error);
  const result = await ctx.api.call("delete", "/api/pods/{name}", { params: { name } });
  ctx.out.result({ name, ...result }, () => `${name} deleted.`);
}

export async function open(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const name = await podName(args[0]);
  const pod = await ctx.api.call("get", "/api/pods/{name}", { params: { name } });
  const url = podUrl(ctx, pod);
  ctx.out.result({ name, url }, () => url);
  const [cmd, argv] = process.platform === "darwin" ? ["open", [url]] : ["xdg-open", [url]];
  const child = spawn(cmd, argv as string[], { stdio: "ignore", detached: true });
  child.on("error", () => ctx.out.note("(no browser could be opened: the address is above)"));
  child.unref();
}
