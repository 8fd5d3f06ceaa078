/**
 * Pod image boot bench (issue #17, item 1): how long a preset image takes, once its container is
 * started, until its page answers — beside the bare server in the same image, same container options.
 *
 *   tsx bench/boot.ts [--reps 7] [--presets static,php,nodejs,python]
 *
 * Each preset's container is made exactly as the agent makes it (`containerCreateOptions`: user 1000,
 * no capabilities, tini, read-only root, tmpfs, limits, its own bridge network, a named home volume
 * seeded by the engine), twice: with the image's own command (`pod-init`: home checks, the runtime tree,
 * runsvdir, the preset's services, cron) and, as the floor, with the `Cmd` replaced by the bare server
 * the preset serves with (`nginx` with the image's config; `node server.js`; `python3 app.py`; for php
 * `php-fpm -D` then `nginx`, as a page of the php preset needs both). Timed: `start()` → HTTP 200 on the
 * web port (polled every 2 ms); then the same after a `stop` (start after stop). Variants take turns in
 * rotating order. Target (issue #30 item 2): the pod's own boot — from the moment its process started
 * (the engine's `State.StartedAt`) until the page's first answer — ≤ 1.5× the bare server's, per preset,
 * first start and start after stop. The engine's start call, which both share, is printed beside it
 * (start → page) but not judged: it would hide a slow boot behind the ~0.4 s both spend in the engine.
 * Exits non-zero when a target is missed. Everything is removed at the end.
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { createDockerClient } from "../agent/docker/client";
import { containerCreateOptions } from "../agent/docker/container-spec";
import { podLabels, podNames } from "../agent/docker/naming";
import type { PresetSlug as Preset } from "../shared/catalog";
import { findPlan } from "../shared/catalog";
import { podSpec } from "../worker/services/pods/spec";
import { fmt, formatTable, median } from "./stats";
import { positiveInt } from "./support/args";
import { removePrefixed } from "./support/floor-cleanup";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET_RATIO = 1.5;
const v = verdicts("boot");
const POLL_MS = 2;
const PREFIX = `bb${process.pid.toString(36)}`;

const BARE: Record<Preset, { cmd: string[]; port: number }> = {
  static: {
    cmd: [
      "nginx",
      "-p",
      "/run/pod/",
      "-e",
      "/home/pod_user/logs/error.log",
      "-c",
      "/opt/podhost/nginx/static.conf",
    ],
    port: 8080,
  },
  php: {
    cmd: [
      "sh",
      "-c",
      "php-fpm8.2 -D -y /opt/podhost/php/php-fpm.conf && exec nginx -p /run/pod/ -e /home/pod_user/logs/error.log -c /opt/podhost/nginx/php.conf",
    ],
    port: 8080,
  },
  nodejs: { cmd: ["/opt/node/20/bin/node", "server.js"], port: 3000 },
  python: { cmd: ["python3", "app.py"], port: 8000 },
};

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "7" },
    presets: { type: "string", default: "static,php,nodejs,python" },
  },
});
const reps = positiveInt("reps", args.reps);
const presets = args.presets.split(",").map((p) => p.trim()) as Preset[];
for (const p of presets) if (!(p in BARE)) throw new Error(`unknown preset ${p}`);

const docker = createDockerClient("/var/run/docker.sock");
const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function getStatus(host: string, port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: "/", agent: false, timeout: 500 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
    req.on("timeout", () => {
      req.destroy();
      resolve(0);
    });
  });
}

interface Boot {
  /** the start call, until the page answers 200 */
  totalMs: number;
  /** from the container's process starting (State.StartedAt) until the page answers 200 */
  bootMs: number;
}

/** One container of `preset` (its own command, or the bare server), started twice. */
async function measure(preset: Preset, variant: "ours" | "bare", n: number): Promise<[Boot, Boot]> {
  const plan = findPlan("launch");
  if (!plan) throw new Error("launch plan missing from the catalog");
  const pod = `boot-${preset}-${variant}-${n}`;
  const names = podNames(PREFIX, pod);
  const spec = podSpec({
    podId: "pod_benchboot",
    name: pod,
    sshPort: 22998,
    preset,
    plan,
    podDomain: "pods.localhost",
  });
  const image = `podhost/${preset}:latest`;
  await docker.createNetwork({
    Name: names.network,
    Driver: "bridge",
    CheckDuplicate: true,
    Labels: podLabels(PREFIX, pod, "pod_benchboot"),
  });
  await docker.createVolume({ Name: names.volume, Driver: "local", Labels: podLabels(PREFIX, pod, "x") });
  const options = containerCreateOptions(PREFIX, spec, image);
  if (variant === "bare") options.Cmd = BARE[preset].cmd;
  const container = await docker.createContainer(options);
  const port = BARE[preset].port;

  const boot = async (): Promise<Boot> => {
    const t0 = now();
    await container.start();
    const info = await container.inspect();
    const ip = info.NetworkSettings.Networks[names.network]?.IPAddress;
    if (!ip) throw new Error(`${pod}: no address after start`);
    while ((await getStatus(ip, port)) !== 200) {
      if (now() - t0 > 20_000) throw new Error(`${pod}: no page within 20 s`);
      await sleep(POLL_MS);
    }
    const answered = now();
    // the engine's clock and ours are the host's; StartedAt is when the container's process began
    const startedAt = Date.parse(info.State.StartedAt);
    if (!Number.isFinite(startedAt)) throw new Error(`${pod}: no StartedAt (${info.State.StartedAt})`);
    return { totalMs: answered - t0, bootMs: performance.timeOrigin + answered - startedAt };
  };
  const first = await boot();
  await container.stop({ t: 10 });
  const again = await boot();
  await container.remove({ force: true });
  await docker.getVolume(names.volume).remove();
  await docker.getNetwork(names.network).remove();
  return [first, again];
}

async function main() {
  console.log(`bench/boot: ${reps} reps of ${presets.join(", ")}; at start: ${machineLoad()}`);
  const samples = new Map<string, Boot[]>();
  const add = (key: string, b: Boot) => samples.set(key, [...(samples.get(key) ?? []), b]);
  const variants = presets.flatMap((p) => (["ours", "bare"] as const).map((v) => [p, v] as const));
  for (let i = 0; i < reps + 1; i++) {
    for (let j = 0; j < variants.length; j++) {
      const [preset, variant] = variants[(i + j) % variants.length] as (typeof variants)[number];
      const [first, again] = await measure(preset, variant, i);
      if (i === 0) continue; // warm-up: page cache, image layers
      add(`${preset}/${variant}/first`, first);
      add(`${preset}/${variant}/again`, again);
    }
  }

  const rows: string[][] = [];
  for (const preset of presets) {
    for (const when of ["first", "again"] as const) {
      const ours = samples.get(`${preset}/ours/${when}`) ?? [];
      const bare = samples.get(`${preset}/bare/${when}`) ?? [];
      const oursBoot = median(ours.map((b) => b.bootMs));
      const bareBoot = median(bare.map((b) => b.bootMs));
      const oursTotal = median(ours.map((b) => b.totalMs));
      const bareTotal = median(bare.map((b) => b.totalMs));
      const ratio = oursTotal / bareTotal;
      rows.push([
        preset,
        when === "first" ? "first start" : "start after stop",
        fmt(oursBoot, 0),
        fmt(bareBoot, 0),
        `${fmt(oursBoot / bareBoot, 2)}x`,
        fmt(oursTotal, 0),
        fmt(bareTotal, 0),
        `${fmt(ratio, 2)}x`,
      ]);
      v.ratio({
        figure: `${preset} ${when === "first" ? "first start" : "start after stop"}: process start → page vs bare server`,
        ours: oursBoot,
        floor: bareBoot,
        target: TARGET_RATIO,
        unit: "ms",
      });
    }
  }
  console.log(
    `\n${formatTable(
      [
        "preset",
        "when",
        "boot ms (ours)",
        "boot ms (bare)",
        "ratio",
        "start→page ms (ours)",
        "start→page (bare)",
        "ratio",
      ],
      rows,
    )}`,
  );
  console.log(
    "\nboot = from the container's process starting (the engine's StartedAt) until the page answers (p50, judged); " +
      "start→page = from the engine's start call (shown, not judged).",
  );
  console.log(`at end: ${machineLoad()}`);
  v.finish();
}

const cleanup = () => removePrefixed(docker, PREFIX);
process.on("SIGINT", () => {
  void cleanup().finally(() => process.exit(130));
});
main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanup);
