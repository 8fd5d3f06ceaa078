import type { PodState } from "../../shared/protocol";
import type { HandlerDeps } from "../handlers/deps";
import { KeyedLock } from "../handlers/keyed-lock";
import type { AgentEvents } from "../handlers/types";
import { syncSidecars } from "../services/sidecars";
import { dockerMessage } from "./client";
import {
  LABEL_DOMAIN,
  LABEL_POD,
  LABEL_POD_ID,
  LABEL_PORT,
  LABEL_SSH_PORT,
  podNames,
  prefixFilter,
} from "./naming";
import { inspectContainer, podStateOf } from "./resources";

interface DockerEvent {
  Type?: string;
  Action?: string;
  time?: number;
  timeNano?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

const WATCHED = ["start", "die", "stop", "destroy"];

/**
 * Follow the engine's event stream for this prefix's containers and tell the control plane when a
 * pod starts, dies, stops or disappears — including what nobody asked for: a crash, the engine's
 * restart policy bringing it back, an engine restart. A (re)started container may have a new
 * address, so its vhost is re-rendered before `running` is reported.
 *
 * Runs until `signal` aborts. When the stream breaks (engine restarting, socket gone) it
 * resubscribes with backoff and asks for the events since the last one it saw, so nothing that
 * happened in between is lost. Consecutive identical states of a pod are reported once.
 */
export async function watchDockerEvents(
  deps: HandlerDeps,
  events: AgentEvents,
  signal: AbortSignal,
): Promise<void> {
  const { docker, config } = deps;
  const log = deps.log.child({ component: "docker-events" });
  const locks = deps.locks ?? new KeyedLock();
  const prefix = config.namePrefix;
  const reported = new Map<string, string>();
  // From "now", so events between the agent's inventory and the subscription are not lost.
  let since = Math.floor(Date.now() / 1000);
  let backoff = 200;
  let failing = false;

  const report = (pod: PodState, reason: string) => {
    const key = `${pod.state} ${pod.ip}`;
    if (reported.get(pod.name) === key) return;
    if (pod.state === "missing") reported.delete(pod.name);
    else reported.set(pod.name, key);
    events.podStatus(pod, reason);
  };

  const handle = async (ev: DockerEvent) => {
    const attrs = ev.Actor?.Attributes ?? {};
    const pod = attrs[LABEL_POD];
    if (ev.Type !== "container" || !pod || !ev.Action || !WATCHED.includes(ev.Action)) return;
    if (ev.time) since = ev.time;
    const names = podNames(prefix, pod);
    // the gateway refuses logins to a stopped pod without asking the engine (agent/ssh/pod-states.ts)
    deps.ssh?.podState?.(pod, ev.Action === "start");
    switch (ev.Action) {
      case "destroy":
        report({ name: pod, state: "missing", ip: null }, "removed");
        return;
      case "die":
        report({ name: pod, state: "stopped", ip: null }, `exited with code ${attrs.exitCode ?? "?"}`);
        return;
      case "stop":
        report({ name: pod, state: "stopped", ip: null }, "stopped");
        return;
      case "start":
        await locks.run(pod, async () => {
          const info = await inspectContainer(docker, names.container);
          const state = podStateOf(pod, info, names.network);
          const labels = info?.Config.Labels ?? {};
          const domain = labels[LABEL_DOMAIN];
          const port = Number(labels[LABEL_PORT]);
          const podId = labels[LABEL_POD_ID];
          if (state.state === "running" && state.ip && domain && port && podId) {
            await deps.ingress
              .upsert({ pod, podId, domains: [domain], ip: state.ip, port })
              .catch((err: unknown) => log.error("vhost re-render failed", { pod, error: String(err) }));
          }
          // A pod the gateway missed (the engine was down when the agent started) gets its listener now.
          const sshPort = Number(labels[LABEL_SSH_PORT]);
          if (info && sshPort > 0) await deps.ssh?.open(pod, sshPort);
          // Its database sidecars join the new network namespace (restarted) or start with it.
          await syncSidecars(deps, pod);
          report(state, "started");
        });
        return;
    }
  };

  while (!signal.aborted) {
    try {
      const stream = await docker.getEvents({
        since,
        filters: { type: ["container"], event: WATCHED, ...prefixFilter(prefix) },
        abortSignal: signal,
      } as Parameters<typeof docker.getEvents>[0]);
      if (failing) log.info("docker events stream back", { since });
      failing = false;
      backoff = 200;
      await consumeLines(stream, signal, async (line) => {
        let ev: DockerEvent;
        try {
          ev = JSON.parse(line) as DockerEvent;
        } catch {
          return;
        }
        await handle(ev).catch((err: unknown) => log.error("event handling failed", { error: String(err) }));
      });
    } catch (err) {
      if (signal.aborted) break;
      if (!failing) log.warn("docker events stream unavailable; retrying", { error: dockerMessage(err) });
      failing = true;
    }
    if (signal.aborted) break;
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 5_000);
  }
}

/** Feed each complete line of a chunked JSON-lines stream to `onLine`, one at a time, until it ends. */
function consumeLines(
  stream: NodeJS.ReadableStream,
  signal: AbortSignal,
  onLine: (line: string) => Promise<void>,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = "";
    let chain = Promise.resolve();
    const destroy = () => (stream as unknown as { destroy?: () => void }).destroy?.();
    signal.addEventListener("abort", destroy, { once: true });
    const done = (err?: unknown) => {
      signal.removeEventListener("abort", destroy);
      chain = chain.then(() => (err ? reject(err) : resolve()));
    };
    stream.on("data", (chunk: Buffer | string) => {
      buf += chunk.toString();
      let i = buf.indexOf("\n");
      while (i >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) chain = chain.then(() => onLine(line));
        i = buf.indexOf("\n");
      }
    });
    stream.on("end", () => done());
    stream.on("close", () => done());
    stream.on("error", (err) => done(err));
  });
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
