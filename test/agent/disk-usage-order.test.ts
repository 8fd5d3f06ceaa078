import { describe, expect, it } from "vitest";
import { largestFirst } from "../../agent/inside/runtime";

/** `pod.disk`'s list (agent/inside/runtime.ts): largest first, equal sizes in a fixed order by path. */
describe("pod.disk's order", () => {
  it("puts the largest first and breaks ties by path in code-unit order", () => {
    const paths = [
      { path: "/home/pod/b", bytes: 10 },
      { path: "/home/pod/Z", bytes: 10 },
      { path: "/home/pod/big", bytes: 500 },
      { path: "/home/pod/a", bytes: 10 },
      { path: "/home/pod/é", bytes: 10 },
      { path: "/home/pod/none", bytes: 0 },
    ];
    expect(paths.sort(largestFirst).map((p) => p.path)).toEqual([
      "/home/pod/big",
      "/home/pod/Z",
      "/home/pod/a",
      "/home/pod/b",
      "/home/pod/é",
      "/home/pod/none",
    ]);
  });
});
