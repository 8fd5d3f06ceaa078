import { randomBytes } from "node:crypto";
import { buildZip } from "../support/zip";
import { describeCreateLikeUnderFaults } from "./create-like";
import { postMultipart } from "./support";

const big = randomBytes(24 * 1024 * 1024);
const files = {
  "index.html": "<!doctype html><title>zipped</title><h1>zipped under faults</h1>\n",
  "big.bin": big,
  "notes/a.md": "v1\n",
};
let zip: Uint8Array;

/**
 * A pod from a ZIP archive under faults (docs/reliability.md): asked while the host is away (refused,
 * the staged archive gone), the agent SIGKILLed as the 202 comes back, once the pod's container
 * exists (the archive being unpacked into it), and after the work at its `command done` line; the
 * Worker restarted once the container exists. Each ends `running` once (one `started` and one
 * `zip_uploaded` event; one container, volume and network more), `~/app` holds the archive's files
 * byte for byte, and no staged archive is left in R2. The sequence and its checks: ./create-like.ts.
 */
describeCreateLikeUnderFaults({
  title: "chaos: from-zip",
  stackName: "chaoszp",
  tag: "zp",
  request: "a from-zip",
  contents: "the archive's files",
  files,
  served: "zipped under faults",
  event: "zip_uploaded",
  agentLines: /command|pod|zip/,
  prepare: async () => {
    // stored (not deflated): random bytes do not compress, and the archive stays 24 MiB to unpack
    zip = await buildZip([
      { name: "index.html", data: files["index.html"] },
      { name: "big.bin", data: big, method: 0 },
      { name: "notes/" },
      { name: "notes/a.md", data: files["notes/a.md"] },
    ]);
  },
  ask: (stack, user, name) =>
    postMultipart(`${stack.api}/api/pods/from-zip`, user.token, [
      { name: "zip", value: zip, filename: "site.zip", type: "application/zip" },
      { name: "name", value: name },
      { name: "plan_slug", value: "build" },
    ]),
});
