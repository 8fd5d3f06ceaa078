import { execFile } from "node:child_process";
import { mkdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerInspect } from "./support/docker";
import { createRunningPods, waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, type TestHost } from "./support/stack";

const run = promisify(execFile);

/**
 * The reconciler on a real host (docs/reliability.md "Drift"): drift made by hand — a deleted pod's
 * container, helper, network, volume, vhost and git record left under the prefix, and a live pod's
 * container removed behind the agent's back — is found by `npm run host:reconcile`, changed by
 * nothing with --dry-run, and repaired (or reported, for data) without --dry-run. Two live pods
 * named after each other's objects (`<a>` and `<a>-home`) keep everything. One stack for all.
 */
describe("reconcile", () => {
  let stack: Stack;
  let host: TestHost;
  let alice: Awaited<ReturnType<typeof signUp>>;
  let a: string;
  let aHome: string;
  let lost: string;
  const pfx = () => host.prefix;
  const ghost = "ghost";
  const reconcile = async (...flags: string[]) =>
    (
      await run(
        "npx",
        [
          "tsx",
          "scripts/host-reconcile.ts",
          host.name,
          "--persist-to",
          stack.worker.persistDir,
          "--api",
          stack.api,
          ...flags,
        ],
        { timeout: 120_000 },
      )
    ).stdout;
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    stack = await startStack("reconcile");
    host = stack.hosts[0] as TestHost;
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    const tag = stack.prefix.slice(-4);
    a = `rc${tag}`;
    aHome = `${a}-home`;
    lost = `lost${tag}`;
    await createRunningPods(alice.api, [
      [a, "static"],
      [aHome, "static"],
      [lost, "static"],
    ]);
    // the drift, by hand: what a deleted pod "ghost" would have left, labelled as the agent labels
    const image = (
      await run("docker", ["inspect", "-f", "{{.Config.Image}}", `${pfx()}-${a}`])
    ).stdout.trim();
    const labels = [
      "--label",
      `podhost.prefix=${pfx()}`,
      "--label",
      `podhost.pod=${ghost}`,
      "--label",
      "podhost.pod_id=pod_ghost",
    ];
    await run("docker", ["create", ...labels, "--name", `${pfx()}-${ghost}`, image]);
    await run("docker", [
      "create",
      "--label",
      `podhost.prefix=${pfx()}`,
      "--label",
      `podhost.git.pod=${ghost}`,
      "--label",
      "podhost.helper=git-build",
      "--name",
      `${pfx()}-${ghost}_build`,
      image,
    ]);
    await run("docker", ["network", "create", ...labels, `${pfx()}-${ghost}`]);
    await run("docker", ["volume", "create", ...labels, `${pfx()}-${ghost}-home`]);
    await writeFile(
      path.join(host.stateDir, "nginx", "vhosts", `${ghost}.conf`),
      "# a deleted pod's vhost\n",
    );
    await mkdir(path.join(host.stateDir, "git", ghost), { recursive: true });
    await writeFile(
      path.join(host.stateDir, "git", ghost, "releases.json"),
      '{"current":null,"releases":[]}',
    );
    // a live pod's container gone behind the agent's back
    await run("docker", ["rm", "-f", `${pfx()}-${lost}`]);
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const ghostObjects = () => [
    dockerInspect("container", `${pfx()}-${ghost}`),
    dockerInspect("container", `${pfx()}-${ghost}_build`),
    dockerInspect("network", `${pfx()}-${ghost}`),
    dockerInspect("volume", `${pfx()}-${ghost}-home`),
    exists(path.join(host.stateDir, "nginx", "vhosts", `${ghost}.conf`)),
    exists(path.join(host.stateDir, "git", ghost)),
  ];

  it("--dry-run names every orphan and changes nothing; the default grace period leaves fresh ones", {
    timeout: 120_000,
  }, async () => {
    const dry = await reconcile("--dry-run", "--grace-minutes", "0");
    for (const line of [
      `would remove container ${pfx()}-${ghost}: container of pod ${ghost}, which has no record on this host`,
      `would remove helper ${pfx()}-${ghost}_build`,
      `would remove network ${pfx()}-${ghost}`,
      `REPORTED volume ${pfx()}-${ghost}-home`,
      `would remove vhost ${path.join(host.stateDir, "nginx", "vhosts", `${ghost}.conf`)}`,
      `would remove release ${path.join(host.stateDir, "git", ghost)}`,
      "(dry run: nothing changed)",
    ])
      expect(dry).toContain(line);
    expect(dry).not.toMatch(new RegExp(`(container|network|volume) ${pfx()}-${a}\\b`));
    for (const found of await Promise.all(ghostObjects())) expect(found).toBeTruthy();

    const fresh = await reconcile();
    expect(fresh).toContain(`left (young) container ${pfx()}-${ghost}`);
    for (const found of await Promise.all(ghostObjects())) expect(found).toBeTruthy();
  });

  it("repairs: orphans removed, data reported, the pod without its container marked error; live pods keep all", {
    timeout: 120_000,
  }, async () => {
    const out = await reconcile("--grace-minutes", "0");
    expect(out).toContain(`removed container ${pfx()}-${ghost}`);
    expect(out).toContain(`REPORTED volume ${pfx()}-${ghost}-home`);
    const [container, helper, network, volume, vhost, record] = await Promise.all(ghostObjects());
    expect({ container, helper, network, vhost, record }).toEqual({
      container: null,
      helper: null,
      network: null,
      vhost: false,
      record: false,
    });
    expect(volume).toBeTruthy();
    // the events watcher may have marked it first; either way it ends error with its event
    await waitForPodStatus(alice.api, lost, "error");
    // the neighbours named like each other's objects: everything theirs is still there and serving
    for (const pod of [a, aHome]) {
      expect(await dockerInspect("container", `${pfx()}-${pod}`), pod).toBeTruthy();
      expect(await dockerInspect("network", `${pfx()}-${pod}`), pod).toBeTruthy();
      expect(await dockerInspect("volume", `${pfx()}-${pod}-home`), pod).toBeTruthy();
      expect((await httpGet(stack.edgePort, `${pod}.pods.localhost`)).status, pod).toBe(200);
    }
    const again = await reconcile("--grace-minutes", "0");
    expect(again).not.toContain("removed ");
  });
});
