import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../worker/db/client";
import { applyPodState } from "../../worker/services/pods/host-sync";
import { insertHost, insertPod, podRecord } from "./support/agent";
import { countingD1 } from "./support/d1-counter";

/** A host's word on a pod becoming its status (worker/services/pods/host-sync.ts). */
describe("applyPodState", () => {
  it("ends a creation in one round trip: the answer's UPDATE moves only a pod still creating", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, status: "creating", ip: null });
    const { d1, roundTrips } = countingD1(env.DB);
    const change = await applyPodState(
      createDb(d1),
      host.id,
      { name: pod.name, state: "running", ip: "10.0.0.9" },
      { settlesCreation: true },
    );
    expect(change).toEqual({ podId: pod.id, status: "running", reason: null });
    expect(roundTrips, JSON.stringify(roundTrips)).toHaveLength(1);
    expect(await podRecord(pod.id)).toMatchObject({ status: "running", ip: "10.0.0.9" });

    // the same answer again (a re-sent command answered from the agent's record) moves nothing
    const again = await applyPodState(
      createDb(env.DB),
      host.id,
      { name: pod.name, state: "running", ip: "10.0.0.9" },
      { settlesCreation: true },
    );
    expect(again).toBeNull();
  });

  it("leaves a deleted pod deleted and another host's pod alone, creation's answer or not", async () => {
    const [host, other] = await Promise.all([insertHost(), insertHost()]);
    const deleted = await insertPod({ hostId: host.id, status: "deleted" });
    const elsewhere = await insertPod({ hostId: other.id, status: "creating", ip: null });
    const db = createDb(env.DB);
    for (const name of [deleted.name, elsewhere.name]) {
      expect(
        await applyPodState(
          db,
          host.id,
          { name, state: "running", ip: "10.0.0.9" },
          { settlesCreation: true },
        ),
      ).toBeNull();
    }
    expect(await podRecord(deleted.id)).toMatchObject({ status: "deleted" });
    expect(await podRecord(elsewhere.id)).toMatchObject({ status: "creating", ip: null });
  });

  it("keeps the pod's address when the answer carries none", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, status: "creating", ip: "10.0.0.4" });
    await applyPodState(
      createDb(env.DB),
      host.id,
      { name: pod.name, state: "running", ip: null },
      { settlesCreation: true },
    );
    expect(await podRecord(pod.id)).toMatchObject({ status: "running", ip: "10.0.0.4" });
  });
});
