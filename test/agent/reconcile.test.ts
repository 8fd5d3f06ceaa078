import { describe, expect, it } from "vitest";
import {
  LABEL_POD,
  LABEL_POD_ID,
  LABEL_PREFIX,
  LABEL_SERVICE,
  LABEL_SERVICE_POD,
} from "../../agent/docker/naming";
import { Owners } from "../../agent/reconcile/owners";

/**
 * Who owns an object under the prefix (agent/reconcile/owners.ts): a pod's id and exact names, never
 * a part of a name. The attacker's angle: tenants name pods after another pod's objects (`shop-home`
 * is pod shop's volume name, `shop-svc-redis` its redis volume's, `shop_build` cannot be a pod name)
 * and must not make the reconciler take the other pod's objects for orphans, nor keep a deleted
 * pod's objects alive.
 */
const P = "px";
const shop = { id: "pod_shop", name: "shop", services: ["redis" as const] };
const shopHome = { id: "pod_evil1", name: "shop-home", services: [] };
const shopSvc = { id: "pod_evil2", name: "shop-svc-redis", services: [] };
const owners = new Owners(P, [shop, shopHome, shopSvc]);
const podLabels = (pod: string, id: string) => ({ [LABEL_PREFIX]: P, [LABEL_POD]: pod, [LABEL_POD_ID]: id });
const serviceLabels = (pod: string, id: string, type: string) => ({
  [LABEL_PREFIX]: P,
  [LABEL_POD_ID]: id,
  [LABEL_SERVICE]: type,
  [LABEL_SERVICE_POD]: pod,
});

describe("reconcile: who owns an object", () => {
  it("each pod owns exactly its own container, network, volume and sidecar, whatever the neighbours are named", () => {
    for (const p of [shop, shopHome, shopSvc]) {
      expect(owners.container(`${P}-${p.name}`, podLabels(p.name, p.id)).owned).toBe(true);
      expect(owners.network(`${P}-${p.name}`, podLabels(p.name, p.id)).owned).toBe(true);
      expect(owners.volume(`${P}-${p.name}-home`, podLabels(p.name, p.id)).owned).toBe(true);
    }
    expect(owners.volume(`${P}-shop-svc-redis`, serviceLabels("shop", shop.id, "redis")).owned).toBe(true);
    expect(owners.container(`${P}-shop_svc-redis`, serviceLabels("shop", shop.id, "redis")).owned).toBe(true);
    // shop's home volume is named like pod shop-home's container, but it is shop's by its labels
    expect(owners.volume(`${P}-shop-home`, podLabels("shop", shop.id))).toMatchObject({
      owned: true,
      pod: "shop",
    });
    expect(owners.expectedSubvolumes()).toEqual(
      new Set([`${P}-shop-home`, `${P}-shop-svc-redis`, `${P}-shop-home-home`, `${P}-shop-svc-redis-home`]),
    );
  });

  it("an object that names a live pod but carries another id, or no id, is no live pod's", () => {
    // a deleted pod `shop` of earlier (another id) left its container; the name alone decides nothing
    expect(owners.container(`${P}-shop`, podLabels("shop", "pod_old"))).toMatchObject({
      owned: false,
      pod: "shop",
    });
    expect(owners.network(`${P}-shop`, podLabels("shop", "pod_old")).owned).toBe(false);
    expect(owners.volume(`${P}-shop-home`, { [LABEL_PREFIX]: P, [LABEL_POD]: "shop" }).owned).toBe(false);
    // a pod's id on an object named for another pod (shop-home's id on shop's volume name)
    expect(owners.volume(`${P}-shop-home`, podLabels("shop-home", shopHome.id)).owned).toBe(false);
    expect(owners.container(`${P}-shop-home`, podLabels("shop", shop.id)).owned).toBe(false);
    // a sidecar of a service the pod does not have, or claiming another pod's
    expect(owners.container(`${P}-shop_svc-mysql`, serviceLabels("shop", shop.id, "mysql")).owned).toBe(
      false,
    );
    expect(owners.volume(`${P}-shop-svc-redis`, serviceLabels("shop", shopSvc.id, "redis")).owned).toBe(
      false,
    );
  });

  it("a helper belongs to the pod its labels or its exact name give; a pod-less one only its age judges", () => {
    expect(
      owners.container(`${P}-shop_build`, { [LABEL_PREFIX]: P, "podhost.git.pod": "shop" }),
    ).toMatchObject({
      kind: "helper",
      owned: true,
    });
    expect(owners.container(`${P}-gone_clone`, { [LABEL_PREFIX]: P })).toMatchObject({
      kind: "helper",
      pod: "gone",
      owned: false,
    });
    // the part before `_` is a whole pod name: `shop-home_x` is shop-home's, and shop's only if it were `shop_x`
    expect(owners.container(`${P}-shop-home_run-1`, { [LABEL_PREFIX]: P }).pod).toBe("shop-home");
    expect(
      owners.container(`${P}-x_verify`, { [LABEL_PREFIX]: P, "podhost.helper": "backup-verify" }).owned,
    ).toBe(false);
    expect(
      owners.container(`${P}_verify`, { [LABEL_PREFIX]: P, "podhost.helper": "backup-verify" }).owned,
    ).toBe(null);
  });
});
