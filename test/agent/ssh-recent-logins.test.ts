import { describe, expect, it } from "vitest";
import { RecentLogins } from "../../agent/ssh/recent-logins";

/** Which address logged in to which pod lately (agent/ssh/recent-logins.ts), with a fake clock. */

describe("RecentLogins", () => {
  it("knows an address's login to one pod for the TTL, not to another pod nor from another address", () => {
    let now = 1_000;
    const recent = new RecentLogins(60_000, () => now);
    expect(recent.has("alpha", "10.0.0.1")).toBe(false);
    recent.add("alpha", "10.0.0.1");
    expect(recent.has("alpha", "10.0.0.1")).toBe(true);
    expect(recent.has("beta", "10.0.0.1")).toBe(false);
    expect(recent.has("alpha", "10.0.0.2")).toBe(false);
    // a pod name cannot be made to collide with another pair by its text
    expect(recent.has("alpha\n10.0.0.1", "")).toBe(false);
    now += 59_999;
    expect(recent.has("alpha", "10.0.0.1")).toBe(true);
    now += 1;
    expect(recent.has("alpha", "10.0.0.1")).toBe(false);
    // a new login renews it
    recent.add("alpha", "10.0.0.1");
    now += 30_000;
    expect(recent.has("alpha", "10.0.0.1")).toBe(true);
  });

  it("stays bounded: past its size the least recently seen pairs are forgotten first", () => {
    const recent = new RecentLogins(60_000, () => 0, 3);
    recent.add("a", "1");
    recent.add("b", "1");
    recent.add("c", "1");
    recent.add("a", "1"); // seen again: now the most recent
    recent.add("d", "1");
    expect(["a", "b", "c", "d"].map((pod) => recent.has(pod, "1"))).toEqual([true, false, true, true]);
    for (let i = 0; i < 10_000; i++) recent.add(`pod${i}`, "203.0.113.9");
    expect(["a", "c", "d"].some((pod) => recent.has(pod, "1"))).toBe(false);
    expect(recent.has("pod9999", "203.0.113.9")).toBe(true);
  });

  it("forgets a pod's logins when the pod goes", () => {
    const recent = new RecentLogins(60_000, () => 0);
    recent.add("alpha", "10.0.0.1");
    recent.add("alpha", "10.0.0.2");
    recent.add("alphabet", "10.0.0.1");
    recent.forget("alpha");
    expect(recent.has("alpha", "10.0.0.1")).toBe(false);
    expect(recent.has("alpha", "10.0.0.2")).toBe(false);
    expect(recent.has("alphabet", "10.0.0.1")).toBe(true);
  });
});
