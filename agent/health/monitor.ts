import { connect } from "node:net";
import type { PresetSlug } from "../../shared/catalog";
import type { Diagnosis } from "../../shared/protocol/health";
import type { DockerClient } from "../docker/client";
import type { Logger } from "../logger";
import { mapLimit } from "../metrics/map-limit";
import type { RunningPod } from "../metrics/running-pods";
import { classify } from "./classify";
import { gatherHealthFacts } from "./facts";

export interface HealthReport {
  name: string;
  diagnosis: Diagnosis | null;
}

export interface HealthMonitorOptions {
  docker: DockerClient;
  log: Logger;
  /** a container younger than this may still be booting its app: not judged yet */
  graceMs?: number;
  /** failed port checks in a row (one per tick) before the app is diagnosed */
  failuresBeforeDiagnosis?: number;
}

const PORT_CHECK_TIMEOUT_MS = 2_000;
const CHECK_CONCURRENCY = 8;

/** One TCP connect to the pod's web port from the host, as the ingress would make it. */
export const portAnswers = (
  host: string,
  port: number,
  timeoutMs = PORT_CHECK_TIMEOUT_MS,
): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });

/** Which service serves a preset's port (images/README.md). */
export const serviceOf = (pod: { preset: PresetSlug | null }): "app" | "web" =>
  pod.preset === "static" || pod.preset === "php" ? "web" : "app";

/**
 * The app health half of the periodic watch. Cheap for healthy pods: one TCP connect each. Only a
 * pod whose port stays shut on `failuresBeforeDiagnosis` ticks in a row (and that is past its boot
 * grace) gets a look inside (gatherHealthFacts, one exec) and a diagnosis.
 *
 * It remembers what it last reported per pod and reports only changes; `resync` (on every
 * reconnect: the control plane may hold anything) makes the next report cover every pod, and
 * `forget` (after a fix) makes a pod's next verdict go out even if it is the same as before.
 */
/**
 * What makes a verdict news: its class, title and fix. The detail (a start count, the log's last
 * lines) changes from tick to tick while the app stays broken the same way: not worth a report.
 */
const verdictKey = (d: Diagnosis | null): string =>
  d === null ? "null" : JSON.stringify([d.class, d.title, d.auto_fixable, d.fix_action ?? null]);

export class HealthMonitor {
  private readonly reported = new Map<string, string>();
  private readonly failures = new Map<string, number>();
  private everything = true;
  /** bumped by resync: a check that began before it must not commit */
  private generation = 0;
  private checkedGeneration = 0;
  private readonly graceMs: number;
  private readonly failuresBeforeDiagnosis: number;

  constructor(private readonly options: HealthMonitorOptions) {
    this.graceMs = options.graceMs ?? 15_000;
    this.failuresBeforeDiagnosis = options.failuresBeforeDiagnosis ?? 2;
  }

  resync(): void {
    this.generation++;
    this.reported.clear();
    this.everything = true;
  }

  forget(pod: string): void {
    this.reported.delete(pod);
    this.failures.delete(pod);
  }

  /**
   * Judge the running pods (skipping those `skip` names: a command is changing them) and answer
   * what to report: changed verdicts, and null for pods that stopped since their last report.
   * `commit` must follow once the report went out.
   */
  async check(
    running: readonly RunningPod[],
    stopped: readonly string[],
    skip: (pod: string) => boolean = () => false,
    now = Date.now(),
  ): Promise<HealthReport[]> {
    this.checkedGeneration = this.generation;
    const verdicts = await mapLimit(running, CHECK_CONCURRENCY, async (pod) =>
      skip(pod.name) ? undefined : this.judge(pod, now),
    );
    const reports: HealthReport[] = [];
    running.forEach((pod, i) => {
      const diagnosis = verdicts[i];
      if (diagnosis === undefined) return;
      if (this.everything || this.reported.get(pod.name) !== verdictKey(diagnosis)) {
        reports.push({ name: pod.name, diagnosis });
      }
    });
    // A stopped pod's app is not unhealthy: whatever was said about it no longer holds.
    for (const name of stopped) {
      this.failures.delete(name);
      const last = this.reported.get(name);
      if (this.everything || (last !== undefined && last !== "null")) reports.push({ name, diagnosis: null });
    }
    const live = new Set([...running.map((p) => p.name), ...stopped]);
    for (const name of [...this.failures.keys()]) if (!live.has(name)) this.failures.delete(name);
    for (const name of [...this.reported.keys()]) if (!live.has(name)) this.reported.delete(name);
    return reports;
  }

  /** The reports of the last check reached the control plane. */
  commit(reports: readonly HealthReport[]): void {
    if (this.checkedGeneration !== this.generation) return;
    this.everything = false;
    for (const r of reports) this.reported.set(r.name, verdictKey(r.diagnosis));
  }

  /** null: healthy; a Diagnosis: what is wrong; undefined: not decided this tick. */
  private async judge(pod: RunningPod, now: number): Promise<Diagnosis | null | undefined> {
    if (!pod.ip || !pod.port) return undefined;
    if (await portAnswers(pod.ip, pod.port)) {
      this.failures.delete(pod.name);
      return null;
    }
    const failures = (this.failures.get(pod.name) ?? 0) + 1;
    this.failures.set(pod.name, failures);
    if (failures < this.failuresBeforeDiagnosis || now - pod.startedAt < this.graceMs) return undefined;
    try {
      const facts = await gatherHealthFacts(this.options.docker, pod.container, serviceOf(pod));
      return classify({ name: pod.name, facts, preset: pod.preset, port: pod.port, now });
    } catch (error) {
      this.options.log.warn("health probe failed", { pod: pod.name, error: String(error) });
      return undefined;
    }
  }
}
