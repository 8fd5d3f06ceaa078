import { randomBytes } from "node:crypto";
import { describeCreateLikeUnderFaults } from "./create-like";

// a paste is text of at most 5 MiB: a 3 MiB text file makes the files' way into the pod take a moment
const files: Record<string, string> = {
  "index.html": "<!doctype html><title>imported</title><h1>imported under faults</h1>\n",
  "big.txt": randomBytes(1536 * 1024).toString("hex"),
  "notes/a.md": "v1\n",
};

/**
 * A pod from a paste import under faults (docs/reliability.md): asked while the host is away
 * (refused, nothing staged), the agent SIGKILLed as the 202 comes back, once the pod's container
 * exists (the pasted files being put into it), and after the work at its `command done` line; the
 * Worker restarted once the container exists. Each ends `running` once (one `started` and one
 * `imported` event; one container, volume and network more), `~/app` holds the pasted files byte
 * for byte, and no staged archive is left in R2. (A URL import: ./url-import.test.ts.) The
 * sequence and its checks: ./create-like.ts.
 */
describeCreateLikeUnderFaults({
  title: "chaos: import",
  stackName: "chaosim",
  tag: "im",
  request: "an import",
  contents: "the pasted files",
  files,
  served: "imported under faults",
  event: "imported",
  agentLines: /command|pod|zip|import/,
  ask: async (_stack, user, name) => {
    const res = await user.api.post("/api/imports", {
      paste: {
        files: Object.keys(files)
          .sort()
          .map((path) => ({ path, content: files[path] })),
        title: "Chaos import",
      },
      name,
      plan_slug: "build",
    });
    return { status: res.status, body: res.body as { error?: string } };
  },
});
