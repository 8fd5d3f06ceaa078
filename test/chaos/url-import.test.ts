import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describeCreateLikeUnderFaults } from "./create-like";

// an asset (at most 10 MiB each) of incompressible bytes: the files' way into the pod takes a moment
const image = randomBytes(6 * 1024 * 1024);
const heading = "imported from a url under faults";
let site: Server | undefined;
let siteUrl = "";
/** while armed, the site holds its next answer of the image until released (the Worker mid-fetch) */
let hold: { armed: boolean; reached: () => void; released: Promise<void>; release: () => void } | undefined;

/**
 * A pod from a URL import under faults (docs/reliability.md): the Worker snapshots a one-page site
 * served on 127.0.0.1 (its page and a 6 MiB image), then the import goes through the same sequence
 * as a paste (./import.test.ts): asked while the host is away (refused, nothing staged; the site
 * is fetched before the host is needed), the agent SIGKILLed as the 202 comes back, once the pod's
 * container exists, and after the work; the Worker restarted once the container exists, and while
 * it fetches the site (the site holds the image's answer): that request is cut before its 202 and
 * leaves no pod and nothing staged, and asked again it ends like the others. Each ends
 * `running` once with one `imported` event, the image byte for byte in `~/app`, the page served
 * and nothing staged left. The page itself is rewritten by the snapshot (its links made relative),
 * so it is checked by its text, not its bytes. The sequence and its checks: ./create-like.ts.
 */
describeCreateLikeUnderFaults({
  title: "chaos: URL import",
  stackName: "chaosui",
  tag: "ui",
  request: "a URL import",
  contents: "the site's files",
  files: { "big.png": image },
  served: heading,
  event: "imported",
  agentLines: /command|pod|zip|import/,
  prepare: async () => {
    site = createServer((req, res) => {
      if (req.url === "/") {
        res.writeHead(200, { "content-type": "text/html" });
        return res.end(`<!doctype html><title>Chaos</title><h1>${heading}</h1><img src="/big.png">`);
      }
      if (req.url === "/big.png") {
        const held = hold?.armed ? hold : undefined;
        if (held) {
          held.armed = false;
          held.reached();
        }
        void (held?.released ?? Promise.resolve()).then(() => {
          res.writeHead(200, { "content-type": "image/png", "content-length": String(image.length) });
          res.end(image);
        });
        return;
      }
      res.writeHead(404).end("not found");
    });
    const listening = site;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/`;
  },
  cleanup: async () => {
    const listening = site;
    if (!listening) return;
    listening.closeAllConnections();
    await new Promise<void>((resolve) => listening.close(() => resolve()));
  },
  cutBefore202: {
    what: "while it fetches the site (before the 202)",
    hold: () =>
      new Promise<void>((reached) => {
        let release = () => {};
        const released = new Promise<void>((r) => {
          release = r;
        });
        hold = { armed: true, reached, released, release };
      }),
    release: () => hold?.release(),
  },
  ask: async (_stack, user, name) => {
    const res = await user.api.post("/api/imports", {
      url: siteUrl,
      mode: "site",
      single_page: true,
      name,
      plan_slug: "build",
    });
    return { status: res.status, body: res.body as { error?: string } };
  },
});
