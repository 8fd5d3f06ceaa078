import type { DriftKind, ReconcilePod } from "../../shared/protocol/reconcile";
import {
  LABEL_BACKUP_POD,
  LABEL_POD,
  LABEL_POD_ID,
  LABEL_SERVICE,
  LABEL_SERVICE_POD,
  podNames,
  serviceNames,
} from "../docker/naming";
import { LABEL_HELPER } from "../docker/pod-user";
import { LABEL_GIT_POD } from "../git/build";

/**
 * Who owns an object under the agent's prefix, decided from the control plane's pods alone: by the
 * pod id in its labels and its exact expected name, never by a part of a name. So a tenant's pod
 * named like another pod's object (`shop-home`, `shop-svc-redis`) owns exactly its own objects, and
 * an object that names a live pod but carries another pod's id (a deleted pod's leftover) is no
 * live pod's. Pure: unit-tested in test/agent/reconcile.test.ts.
 */
export class Owners {
  private readonly byId: Map<string, ReconcilePod>;
  private readonly byName: Map<string, ReconcilePod>;

  constructor(
    private readonly prefix: string,
    pods: readonly ReconcilePod[],
  ) {
    this.byId = new Map(pods.map((p) => [p.id, p]));
    this.byName = new Map(pods.map((p) => [p.name, p]));
  }

  /** the live pod of this exact name, if any */
  pod(name: string | undefined): ReconcilePod | undefined {
    return name === undefined ? undefined : this.byName.get(name);
  }

  /**
   * A container: the pod's own, a database sidecar, or a helper (a deploy's build or candidate, a
   * backup helper, a clone or one-off run: the pod's container name, `_`, a role). Answers its kind,
   * the pod it names and whether a live pod owns it.
   */
  container(name: string, labels: Record<string, string>): Owned {
    const service = labels[LABEL_SERVICE];
    if (service !== undefined) {
      const pod = labels[LABEL_SERVICE_POD] ?? null;
      const owner = this.byId.get(labels[LABEL_POD_ID] ?? "");
      const owned =
        owner !== undefined &&
        owner.name === pod &&
        (owner.services as string[]).includes(service) &&
        serviceNames(this.prefix, pod, service).container === name;
      return { kind: "sidecar", pod, owned };
    }
    const helper = labels[LABEL_HELPER] !== undefined || name.includes("_");
    if (helper) {
      // a helper belongs to its pod's operations (each removes its own at the agent's start); one
      // whose pod is gone is an orphan. The pod is read from its labels, else from its exact name.
      const pod =
        labels[LABEL_GIT_POD] ?? labels[LABEL_BACKUP_POD] ?? labels[LABEL_POD] ?? this.podOfHelperName(name);
      return { kind: "helper", pod: pod ?? null, owned: pod === undefined ? null : this.byName.has(pod) };
    }
    const pod = labels[LABEL_POD] ?? null;
    const owner = this.byId.get(labels[LABEL_POD_ID] ?? "");
    const owned = pod !== null && owner?.name === pod && podNames(this.prefix, pod).container === name;
    return { kind: "container", pod, owned };
  }

  /** A pod's network: named after the pod, carrying its id. */
  network(name: string, labels: Record<string, string>): Owned {
    const pod = labels[LABEL_POD] ?? null;
    const owner = this.byId.get(labels[LABEL_POD_ID] ?? "");
    const owned = pod !== null && owner?.name === pod && podNames(this.prefix, pod).network === name;
    return { kind: "network", pod, owned };
  }

  /** A pod's home volume, or a database service's data volume. */
  volume(name: string, labels: Record<string, string>): Owned {
    const owner = this.byId.get(labels[LABEL_POD_ID] ?? "");
    const service = labels[LABEL_SERVICE];
    if (service !== undefined) {
      const pod = labels[LABEL_SERVICE_POD] ?? null;
      const owned =
        owner !== undefined &&
        owner.name === pod &&
        (owner.services as string[]).includes(service) &&
        serviceNames(this.prefix, pod, service).volume === name;
      return { kind: "volume", pod, owned };
    }
    const pod = labels[LABEL_POD] ?? null;
    const owned = pod !== null && owner?.name === pod && podNames(this.prefix, pod).volume === name;
    return { kind: "volume", pod, owned };
  }

  /**
   * The pod-disk subvolumes a live pod has (its home, its services' data): every other subvolume
   * under the prefix without an engine volume of its name belongs to nobody.
   */
  expectedSubvolumes(): Set<string> {
    const names = new Set<string>();
    for (const p of this.byName.values()) {
      names.add(podNames(this.prefix, p.name).volume);
      for (const s of p.services) names.add(serviceNames(this.prefix, p.name, s).volume);
    }
    return names;
  }

  /** `<prefix>-<pod>_<role>`: the pod is what lies between, when that is a whole pod name. */
  private podOfHelperName(name: string): string | undefined {
    const start = `${this.prefix}-`;
    const cut = name.indexOf("_");
    if (!name.startsWith(start) || cut < 0) return undefined;
    return name.slice(start.length, cut);
  }
}

export interface Owned {
  kind: DriftKind;
  pod: string | null;
  /** null: nothing says whose it is (a helper without a pod), so only its age decides */
  owned: boolean | null;
}
