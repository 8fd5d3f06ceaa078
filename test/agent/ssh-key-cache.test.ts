import { describe, expect, it } from "vitest";
import { type LoadKeyFile, PodKeySets, Slots } from "../../agent/ssh/key-cache";
import type { KeyFileCheck } from "../../agent/ssh/key-file";

/** The gateway's per-pod copy of authorized_keys (agent/ssh/key-cache.ts), with a fake pod and clock. */

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@test";

function setup() {
  let now = 1_000;
  const files = new Map<string, { identity: string; text: string }>();
  const calls: { pod: string; known: string | null }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const load: LoadKeyFile = async (pod, known) => {
    calls.push({ pod, known });
    await gate;
    const f = files.get(pod) ?? { identity: "absent", text: "" };
    const r: KeyFileCheck =
      f.identity === known
        ? { changed: false }
        : { changed: true, identity: f.identity, file: { text: f.text, truncated: false } };
    return r;
  };
  const sets = new PodKeySets({ load, maxLoads: 2, freshMs: 1_000, fullReadMs: 60_000, now: () => now });
  return {
    sets,
    calls,
    files,
    tick: (ms: number) => {
      now += ms;
    },
    hold: () => {
      let open: (() => void) | undefined;
      gate = new Promise<void>((r) => {
        open = r;
      });
      return () => open?.();
    },
  };
}

describe("PodKeySets", () => {
  it("serves many logins from one check within a second, then checks the identity only", async () => {
    const t = setup();
    t.files.set("p", { identity: "1", text: `${KEY}\n` });
    const all = await Promise.all(Array.from({ length: 50 }, () => t.sets.keys("p")));
    expect(all.every((k) => k.length === 1)).toBe(true);
    expect(t.calls).toEqual([{ pod: "p", known: null }]);
    t.tick(500);
    await t.sets.keys("p");
    expect(t.calls).toHaveLength(1);
    t.tick(600);
    expect(await t.sets.keys("p")).toHaveLength(1);
    expect(t.calls[1]).toEqual({ pod: "p", known: "1" });
  });

  it("reads the file again when its identity changed, at once after stale or invalidate", async () => {
    const t = setup();
    t.files.set("p", { identity: "1", text: `${KEY}\n` });
    await t.sets.keys("p");
    t.files.set("p", { identity: "2", text: "" });
    expect(await t.sets.keys("p")).toHaveLength(1); // still fresh
    t.sets.stale("p");
    expect(await t.sets.keys("p")).toHaveLength(0);
    expect(t.calls.at(-1)).toEqual({ pod: "p", known: "1" });
    t.sets.invalidate("p");
    await t.sets.keys("p");
    expect(t.calls.at(-1)).toEqual({ pod: "p", known: null });
  });

  it("does not trust a check begun before the copy went stale", async () => {
    const t = setup();
    t.files.set("p", { identity: "1", text: "" });
    const open = t.hold();
    const first = t.sets.keys("p");
    t.sets.stale("p"); // a session wrote the file while the check ran
    t.files.set("p", { identity: "2", text: `${KEY}\n` });
    open();
    await first;
    expect(await t.sets.keys("p")).toHaveLength(1);
    expect(t.calls).toHaveLength(2); // the second login checked again rather than trusting the first check
  });

  it("runs at most maxLoads checks at once across pods", async () => {
    const t = setup();
    const open = t.hold();
    const pending = ["a", "b", "c", "d"].map((p) => t.sets.keys(p));
    await new Promise((r) => setTimeout(r, 10));
    expect(t.calls).toHaveLength(2);
    open();
    await Promise.all(pending);
    expect(t.calls).toHaveLength(4);
  });

  it("forgets a failed check: the next login checks again", async () => {
    let fail = true;
    const sets = new PodKeySets({
      load: async () => {
        if (fail) throw new Error("unreadable");
        return { changed: true, identity: "1", file: { text: `${KEY}\n`, truncated: false } };
      },
      maxLoads: 1,
      freshMs: 1_000,
      fullReadMs: 60_000,
    });
    await expect(sets.keys("p")).rejects.toThrow("unreadable");
    fail = false;
    expect(await sets.keys("p")).toHaveLength(1);
  });
});

describe("Slots", () => {
  it("lets the waiting run in order as slots free up", async () => {
    const slots = new Slots(1);
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((n) => slots.run(async () => void order.push(n))));
    expect(order).toEqual([1, 2, 3]);
  });
});
