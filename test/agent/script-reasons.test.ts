import { describe, expect, it } from "vitest";
import { whyItFailed } from "../../agent/backups/pod-run";

/** A backup's or restore's failed script never leaves its reason empty after the colon (issue 28). */
describe("whyItFailed", () => {
  it("is the tail of what the script printed on stderr", () => {
    expect(whyItFailed({ exitCode: 2, stderr: "tar: home: Cannot open\n" })).toBe("tar: home: Cannot open");
  });

  it("says how a silent script ended: the signal that killed it, or that it printed nothing", () => {
    expect(whyItFailed({ exitCode: 143, stderr: "" })).toBe("killed by signal 15");
    expect(whyItFailed({ exitCode: 1, stderr: "  \n" })).toBe("it printed nothing");
  });
});
