import type { PodSidecars } from "../../shared/protocol";

const keyOf = (pod: PodSidecars): string =>
  pod.services
    .map((s) => `${s.type}=${s.state}`)
    .sort()
    .join(",");

/**
 * What the periodic watch tells the control plane about its running pods' database sidecars
 * (`agent:services`, docs/services.md "After the install"): a pod's list when it changed, and every
 * running pod's after `resync` (each (re)connect: the control plane may hold anything; a pod without
 * sidecars says so with an empty list, which is how a sidecar removed meanwhile shows). A new list
 * counts once two looks in a row agree, so a sidecar restarted with its pod between two looks is not
 * reported as failed; a pod a command is working on (an install or removal changes its sidecars) is
 * not judged that tick. `commit` follows once the report went out, else the next tick says it again.
 */
export class SidecarReporter {
  /** per pod: the list last sent */
  private readonly reported = new Map<string, string>();
  /** per pod: the list of the previous look */
  private readonly seen = new Map<string, string>();
  /** bumped by resync: a check that began before it must not commit */
  private generation = 0;
  private checkedGeneration = 0;

  resync(): void {
    this.generation++;
    this.reported.clear();
  }

  /** The running pods' lists to send (from PodLister.list's `sidecars`). */
  check(pods: readonly PodSidecars[], busy?: (pod: string) => boolean): PodSidecars[] {
    this.checkedGeneration = this.generation;
    const out: PodSidecars[] = [];
    const present = new Set<string>();
    for (const pod of pods) {
      present.add(pod.name);
      if (busy?.(pod.name)) {
        this.seen.delete(pod.name);
        continue;
      }
      const key = keyOf(pod);
      const previous = this.seen.get(pod.name);
      this.seen.set(pod.name, key);
      if (previous === key && this.reported.get(pod.name) !== key) out.push(pod);
    }
    // a pod that stopped or went: its sidecars stopped with it; its next run starts afresh
    for (const known of [this.seen, this.reported])
      for (const name of [...known.keys()]) if (!present.has(name)) known.delete(name);
    return out;
  }

  commit(reports: readonly PodSidecars[]): void {
    if (this.checkedGeneration !== this.generation) return;
    for (const pod of reports) this.reported.set(pod.name, keyOf(pod));
  }
}
